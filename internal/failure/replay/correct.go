package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Why a correction is refused. Each error a correction returns for a
// dead letter it will not take matches one of them.
var (
	// ErrCorrection is a correction that is not well formed: no reason,
	// nothing to change, metadata that is not a JSON object, or a job
	// over the producer's limits.
	ErrCorrection = errors.New("correction")
	// ErrNoDeadLetter is a dead letter id that names no dead letter.
	ErrNoDeadLetter = errors.New("no such dead letter")
	// ErrEscalated is an escalation: its payload is redacted and it is
	// resolved by its policy, never replayed.
	ErrEscalated = errors.New("dead letter is an escalation")
	// ErrResolved is a dead letter whose chunk was stored since.
	ErrResolved = errors.New("dead letter is resolved")
	// ErrNotChunkJob is a dead letter whose payload is not a chunk job
	// (an unreadable document's) or was purged.
	ErrNotChunkJob = errors.New("dead letter payload is not a chunk job")
	// ErrInFlight is a dead letter already dispatched by a replay or a
	// correction that has not failed since.
	ErrInFlight = errors.New("dead letter is already dispatched")
	// ErrStale is a dead letter whose chunk is no longer parked at its
	// version: a newer version was ingested, or the chunk moved on.
	ErrStale = errors.New("dead letter is stale")
)

// Correction replays one dead letter with a corrected payload: new text,
// new metadata, or both. The corrected job keeps the chunk's doc id,
// index, version, source and run, takes a content hash of its new text
// and metadata, and goes to ingest.replay.<source> as the next replay
// generation, so the consumer screens it (secrets, policy) again before
// it is embedded and stored.
type Correction struct {
	// DeadLetterID names the dead letter; required.
	DeadLetterID string
	// Text replaces the chunk's text when not nil.
	Text *string
	// Metadata replaces the chunk's metadata when not nil: a JSON object,
	// or {} or null for none. It is stored canonical (messages.CanonicalJSON).
	Metadata *json.RawMessage
	// Origin says where the correction came from, for the audit trail
	// ("edited", or the source a text was re-derived from). Defaults to
	// "edited".
	Origin string
	// By names who asked, Reason why; Reason is required.
	By, Reason string
}

// Validate says how to fix a correction that cannot be taken.
func (c Correction) Validate() error {
	switch {
	case c.DeadLetterID == "":
		return fmt.Errorf("%w: name the dead letter to correct", ErrCorrection)
	case c.Reason == "":
		return fmt.Errorf("%w: a correction needs a reason, for the audit trail", ErrCorrection)
	case c.Text == nil && c.Metadata == nil:
		return fmt.Errorf("%w: give a corrected text, corrected metadata, or both", ErrCorrection)
	case c.Metadata != nil && len(*c.Metadata) > messages.MaxMetadataBytes:
		return fmt.Errorf("%w: metadata is %d bytes, over the producer's %d-byte limit", ErrCorrection, len(*c.Metadata), messages.MaxMetadataBytes)
	}
	return nil
}

// CorrectionReport is what a correction did or, dry, would do.
type CorrectionReport struct {
	// ReplayID names the correction's replay_audit row, and on an
	// executed one the replay id its job carries.
	ReplayID string `json:"replay_id"`
	// DryRun is true when nothing was marked or dispatched.
	DryRun bool `json:"dry_run"`
	CorrectionScope
	// Dispatched is true once JetStream acknowledged the corrected job.
	Dispatched bool `json:"dispatched"`
}

// CorrectionScope is what a correction's replay_audit row records as its
// scope: the chunk and the diff.
type CorrectionScope struct {
	DeadLetterID   string `json:"dead_letter_id"`
	DocID          string `json:"doc_id"`
	ChunkIndex     int    `json:"chunk_index"`
	Version        int64  `json:"version"`
	Source         string `json:"source"`
	SourceNativeID string `json:"source_native_id"`
	// ReplayGen is the generation the corrected job is dispatched as.
	ReplayGen int    `json:"replay_gen"`
	Origin    string `json:"origin"`
	Diff      Diff   `json:"diff"`
}

// Diff is a correction's change of payload.
type Diff struct {
	// HashBefore and HashAfter are the chunk's content hashes.
	HashBefore string `json:"content_hash_before"`
	HashAfter  string `json:"content_hash_after"`
	// Text and Metadata are unified line diffs of the text and of the
	// canonical metadata (indented), empty when unchanged. Each compares
	// at most MaxDiffLines lines a side; Truncated says one was longer.
	Text      string `json:"text_diff,omitempty"`
	Metadata  string `json:"metadata_diff,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Withheld names the secret or policy rule the text or metadata,
	// before or after, matches: the line diffs are then left out, so that
	// no secret is written to the audit trail. The consumer escalates the
	// corrected job when it is the one that matches.
	Withheld string `json:"withheld,omitempty"`
}

// DryRun shows the correction's diff and changes nothing but the audit
// trail: it records a replay_audit row (action correct, dry run) with the
// diff as its scope. It refuses what Execute would refuse, with the same
// errors.
func (c Correction) DryRun(ctx context.Context, pool *pgxpool.Pool) (*CorrectionReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p, err := c.prepare(ctx, pool, "", false)
	if err != nil {
		return nil, err
	}
	rep := &CorrectionReport{ReplayID: newID("cd"), DryRun: true, CorrectionScope: p.scope}
	if err := insertAudit(ctx, pool, auditRecord{id: rep.ReplayID, action: ActionCorrect, by: c.By, reason: c.Reason,
		scope: p.scope, dryRun: true, selected: 1}); err != nil {
		return nil, err
	}
	return rep, nil
}

// Execute carries the correction out. In one transaction it locks the
// dead letter, sets its chunk's manifest row to the corrected content
// hash and job (manifest.Correct), records the replay_audit row (action
// correct) with the diff, and marks the dead letter replayed under the
// correction's id; then it publishes the corrected job. If the publish
// fails, the mark and the manifest row are undone so that the dead letter
// can be corrected again. Run twice, the second run finds the dead letter
// in flight (ErrInFlight) and dispatches nothing.
func (c Correction) Execute(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream) (*CorrectionReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	replayID := newReplayID()
	var p *prepared
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if p, err = c.prepare(ctx, tx, replayID, true); err != nil {
			return err
		}
		moved, err := manifest.Correct(ctx, tx, p.forward)
		if err != nil {
			return fmt.Errorf("correct manifest: %w", err)
		}
		if !moved {
			return fmt.Errorf("%w: chunk %d of %s is no longer parked with the payload the dead letter holds", ErrStale, p.scope.ChunkIndex, p.scope.DocID)
		}
		if err := insertAudit(ctx, tx, auditRecord{id: replayID, action: ActionCorrect, by: c.By, reason: c.Reason,
			scope: p.scope, selected: 1}); err != nil {
			return err
		}
		return deadletter.MarkReplayed(ctx, tx, replayID, []string{c.DeadLetterID})
	})
	if err != nil {
		return nil, err
	}
	rep := &CorrectionReport{ReplayID: replayID, CorrectionScope: p.scope}
	dispatched, failed, derr := dispatch(ctx, js, []job{p.job}, 0)
	rep.Dispatched = len(dispatched) == 1
	if len(failed) > 0 {
		derr = errors.Join(derr, deadletter.UnmarkReplayed(ctx, pool, replayID, failed), c.undo(ctx, pool, p))
	}
	derr = errors.Join(derr, recordDispatched(ctx, pool, replayID, len(dispatched)))
	if derr != nil {
		return rep, fmt.Errorf("correct %s: %w", c.DeadLetterID, derr)
	}
	return rep, nil
}

// undo restores the manifest row a correction whose job was never sent
// changed.
func (c Correction) undo(ctx context.Context, pool *pgxpool.Pool, p *prepared) error {
	_, err := manifest.Correct(context.WithoutCancel(ctx), pool, p.backward)
	if err != nil {
		return fmt.Errorf("restore the manifest row: %w", err)
	}
	return nil
}

// prepared is a correction ready to carry out.
type prepared struct {
	scope             CorrectionScope
	job               job
	forward, backward manifest.Correction
}

// prepare reads and checks the dead letter (locking it with lock) and
// builds the corrected job, as replay replayID.
func (c Correction) prepare(ctx context.Context, q querier, replayID string, lock bool) (*prepared, error) {
	r, err := deadletter.ReadCorrectable(ctx, q, c.DeadLetterID, lock)
	if errors.Is(err, deadletter.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s (see sluice dlq ls)", ErrNoDeadLetter, c.DeadLetterID)
	}
	if err != nil {
		return nil, err
	}
	if err := refusal(r, c.DeadLetterID); err != nil {
		return nil, err
	}
	before, err := messages.DecodeChunkJob(r.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotChunkJob, c.DeadLetterID, err)
	}
	after, err := c.apply(before)
	if err != nil {
		return nil, err
	}
	dl := messages.DeadLetter{DeadLetterID: c.DeadLetterID, ReplayGen: r.ReplayGen}
	next := deadletter.NextGeneration(after, dl, replayID)
	raw, err := next.Encode()
	if err != nil {
		return nil, fmt.Errorf("%w: the corrected job: %v (the producer parks a chunk whose job is over %d bytes as too_large)",
			ErrCorrection, err, messages.MaxMessageBytes)
	}
	owed := after
	owed.ReplayGen, owed.DeadLetterID, owed.ReplayID = 0, "", ""
	owedRaw, err := owed.Encode()
	if err != nil {
		return nil, fmt.Errorf("%w: the corrected job: %v", ErrCorrection, err)
	}
	origin := c.Origin
	if origin == "" {
		origin = "edited"
	}
	p := &prepared{
		scope: CorrectionScope{DeadLetterID: c.DeadLetterID, DocID: r.DocID, ChunkIndex: r.ChunkIndex, Version: r.Version,
			Source: r.Source, SourceNativeID: r.NativeID, ReplayGen: next.ReplayGen, Origin: origin, Diff: diffJobs(before, after)},
		job:      job{id: c.DeadLetterID, source: r.Source, msgID: messages.ReplayMsgID(c.DeadLetterID, next.ReplayGen), raw: raw},
		forward:  manifest.Correction{DocID: r.DocID, Index: r.ChunkIndex, Version: r.Version, FromHash: *r.ManifestHash, ToHash: after.ContentHash, ToJob: owedRaw},
		backward: manifest.Correction{DocID: r.DocID, Index: r.ChunkIndex, Version: r.Version, FromHash: after.ContentHash, ToHash: *r.ManifestHash, ToJob: r.ManifestJob},
	}
	return p, nil
}

// refusal says why the dead letter r is not corrected, or nil.
func refusal(r *deadletter.Correctable, id string) error {
	switch {
	case r.Escalated:
		return fmt.Errorf("%w: %s is never replayed: resolve it by its policy", ErrEscalated, id)
	case r.Resolved:
		return fmt.Errorf("%w: %s: its chunk was stored since; nothing to correct", ErrResolved, id)
	case r.Payload == nil:
		return fmt.Errorf("%w: %s has no payload (purged by retention)", ErrNotChunkJob, id)
	case r.Dispatched:
		return fmt.Errorf("%w: %s was dispatched by %s and has not failed since; wait for its outcome (sluice dlq audit)", ErrInFlight, id, r.DispatchedBy)
	case r.ManifestVersion == nil:
		return fmt.Errorf("%w: %s: its chunk is no longer in the manifest", ErrStale, id)
	case *r.ManifestVersion != r.Version:
		return fmt.Errorf("%w: %s is of version %d; the chunk is at version %d now: correct that version's dead letter, if any", ErrStale, id, r.Version, *r.ManifestVersion)
	case manifest.Status(*r.ManifestStatus) != manifest.Parked:
		return fmt.Errorf("%w: %s: its chunk is %s, not parked", ErrStale, id, *r.ManifestStatus)
	}
	return nil
}

// apply returns job with c's text and metadata and their content hash.
func (c Correction) apply(job messages.ChunkJob) (messages.ChunkJob, error) {
	if c.Text != nil {
		job.Text = *c.Text
	}
	if c.Metadata != nil {
		meta, err := messages.CanonicalJSON(*c.Metadata)
		if err != nil {
			return job, fmt.Errorf("%w: metadata: %v", ErrCorrection, err)
		}
		job.Metadata = meta
		if string(meta) == "{}" {
			job.Metadata = nil
		}
	}
	before := job.ContentHash
	hash, err := messages.ContentHash(job.Text, job.Metadata)
	if err != nil {
		return job, fmt.Errorf("%w: %v", ErrCorrection, err)
	}
	if hash == before {
		return job, fmt.Errorf("%w: the corrected payload is the one the dead letter holds (content hash %s): nothing to change", ErrCorrection, hash)
	}
	job.ContentHash = hash
	return job, nil
}

// diffJobs is the diff from before to after, withheld when either
// touches a secret.
func diffJobs(before, after messages.ChunkJob) Diff {
	d := Diff{HashBefore: before.ContentHash, HashAfter: after.ContentHash}
	if d.Withheld = secretRule(before); d.Withheld == "" {
		d.Withheld = secretRule(after)
	}
	if d.Withheld != "" {
		return d
	}
	var tt, mt bool
	d.Text, tt = unifiedDiff(before.Text, after.Text)
	d.Metadata, mt = unifiedDiff(indented(before.Metadata), indented(after.Metadata))
	d.Truncated = tt || mt
	return d
}

// secretRule names the first secret or policy rule (the consumer's
// default ones) that job's text or metadata matches, or "".
func secretRule(job messages.ChunkJob) string {
	if err := compliance.NewChecker(compliance.DefaultRules(), nil).Check(&job); err != nil {
		var e *classify.Error
		if errors.As(err, &e) && e.Code != "" {
			return e.Code
		}
		return classify.ClassPolicyViolation
	}
	found, err := secrets.ScanMetadataJSON(job.Metadata)
	if err != nil {
		return "unreadable_metadata"
	}
	if len(found) > 0 {
		return found[0].Rule
	}
	return ""
}

// indented is canonical metadata one member a line, for a line diff.
func indented(meta json.RawMessage) string {
	if len(meta) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, meta, "", "  "); err != nil {
		return string(meta)
	}
	return b.String()
}
