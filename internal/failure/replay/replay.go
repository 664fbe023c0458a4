package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// MaxLimit caps Scope.Limit: one replay marks and publishes at most this
// many dead letters; run it again for the rest.
const MaxLimit = 10000

// DefaultLimit is the Scope.Limit `sluice dlq replay` uses unless told
// otherwise.
const DefaultLimit = 500

// ErrScope is returned for a scope a replay must not take: too broad, or
// a limit out of range.
var ErrScope = errors.New("replay scope")

// Scope is what a replay selects: a filter and a cap. Among the matches,
// only eligible dead letters are taken, oldest failure first: unresolved,
// with a payload, not in flight (replayed since they last failed), never
// an escalation, and — unless IncludeReplayed — never replayed before
// (see deadletter.AlreadyReplayedSQL).
type Scope struct {
	deadletter.Filter
	// Limit caps the selection, 1..MaxLimit.
	Limit int `json:"limit"`
	// IncludeReplayed also takes dead letters that failed again after a
	// replay. Defaults to false: a replay is a second chance, not a loop.
	IncludeReplayed bool `json:"include_replayed,omitempty"`
	// RatePerSecond bounds how fast Execute publishes the replay jobs, so
	// a large replay does not flood the embedder's budget. Defaults to 0:
	// as fast as JetStream acknowledges.
	RatePerSecond float64 `json:"rate_per_second,omitempty"`
}

// Validate says how to fix a scope a replay must not take.
func (s Scope) Validate() error {
	if err := s.Filter.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrScope, err)
	}
	if !s.Narrow() {
		return fmt.Errorf("%w: name at least a source, an error class, a run or a start time: replays are never everything", ErrScope)
	}
	if s.Limit < 1 || s.Limit > MaxLimit {
		return fmt.Errorf("%w: limit %d: want 1..%d", ErrScope, s.Limit, MaxLimit)
	}
	if s.Disposition == messages.DispositionEscalate {
		return fmt.Errorf("%w: escalations are never replayed to the embedder: resolve them by their policy, not by a replay", ErrScope)
	}
	if s.RatePerSecond < 0 || s.RatePerSecond > MaxRatePerSecond {
		return fmt.Errorf("%w: rate %g/s: want 0 (unlimited) up to %d/s", ErrScope, s.RatePerSecond, MaxRatePerSecond)
	}
	return nil
}

// MaxRatePerSecond caps Scope.RatePerSecond; above it a limit limits
// nothing JetStream would not.
const MaxRatePerSecond = 100000

// selection is what a replay of s takes of the dead letters.
func (s Scope) selection() deadletter.Selection {
	return deadletter.Selection{Filter: s.Filter, Limit: s.Limit, IncludeReplayed: s.IncludeReplayed}
}

// Preview is the report of a replay, dry or executed.
type Preview struct {
	// ReplayID names the replay_audit row of an executed replay.
	ReplayID string `json:"replay_id,omitempty"`
	// DryRun is true when nothing was marked or dispatched.
	DryRun bool `json:"dry_run"`
	// Scope is what was asked for.
	Scope Scope `json:"scope"`
	// Selected is how many dead letters the replay takes (at most Limit).
	Selected int `json:"selected"`
	// ByClass and BySource split Selected.
	ByClass  map[string]int `json:"by_error_class"`
	BySource map[string]int `json:"by_source"`
	// AlreadyStored counts those whose chunk already has a vector with the
	// same content hash: replaying them changes nothing.
	AlreadyStored int `json:"already_have_vector"`
	// NotReplayable counts those whose payload is not a chunk job.
	NotReplayable int `json:"not_replayable"`
	// ExcludedReplayed counts unresolved matches left out because they
	// were already replayed once (Scope.IncludeReplayed takes them).
	ExcludedReplayed int `json:"excluded_already_replayed"`
	// ExcludedEscalated counts unresolved matches left out because they
	// are escalations, which are never replayed.
	ExcludedEscalated int `json:"excluded_escalations"`
	// Dispatched counts the jobs JetStream acknowledged.
	Dispatched int `json:"dispatched"`
}

type querier = deadletter.Reader

// selectCandidates reads the eligible dead letters in scope. With lock,
// it locks them (SKIP LOCKED, so concurrent replays never select the same
// row).
func selectCandidates(ctx context.Context, q querier, s Scope, lock bool) ([]deadletter.Candidate, error) {
	return deadletter.Select(ctx, q, s.selection(), lock)
}

// countExcluded counts the unresolved matches of s that the eligibility
// rules leave out, so a preview can say why fewer were selected.
func countExcluded(ctx context.Context, q querier, s Scope, p *Preview) error {
	var err error
	p.ExcludedEscalated, p.ExcludedReplayed, err = deadletter.Excluded(ctx, q, s.selection())
	return err
}

func summarize(s Scope, cands []deadletter.Candidate) *Preview {
	p := &Preview{DryRun: true, Scope: s, Selected: len(cands), ByClass: map[string]int{}, BySource: map[string]int{}}
	for _, c := range cands {
		p.ByClass[c.ErrorClass]++
		p.BySource[c.Source]++
		if c.HasVector {
			p.AlreadyStored++
		}
		if _, err := messages.DecodeChunkJob(c.Payload); err != nil {
			p.NotReplayable++
		}
	}
	return p
}

// DryRun counts what a replay of s would take, dispatching and marking
// nothing, and records the preview in replay_audit (action dry_run, with
// requestedBy) so that who looked at what is on the trail too. The
// returned Preview's ReplayID names that row.
func DryRun(ctx context.Context, pool *pgxpool.Pool, s Scope, requestedBy string) (*Preview, error) {
	p, err := Count(ctx, pool, s)
	if err != nil {
		return nil, err
	}
	p.ReplayID = newID("dr")
	if err := insertAudit(ctx, pool, auditRecord{id: p.ReplayID, action: ActionDryRun, by: requestedBy,
		scope: s, dryRun: true, selected: p.Selected, alreadyStored: p.AlreadyStored}); err != nil {
		return nil, err
	}
	return p, nil
}

// Count counts what a replay of s would take and changes nothing, not
// even the audit trail: for a form re-shown after a mistake, whose dry run
// is already on the trail. It returns ErrScope for a scope that fails
// Validate.
func Count(ctx context.Context, pool *pgxpool.Pool, s Scope) (*Preview, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cands, err := selectCandidates(ctx, pool, s, false)
	if err != nil {
		return nil, err
	}
	p := summarize(s, cands)
	if err := countExcluded(ctx, pool, s, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Execute replays s: it marks the selected dead letters and records the
// audit row (reason, requestedBy) in one transaction, before anything is
// dispatched, so that running the same replay again selects nothing; then
// it publishes the replay jobs to ingest.replay.<source> through js. Rows
// whose dispatch failed are unmarked so that a later replay can pick them
// up; the error then says how many were sent. Publishing is paced by
// Scope.RatePerSecond. It returns ErrScope for a scope that fails
// Validate, including one that names the escalate disposition.
func Execute(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, s Scope, reason, requestedBy string) (*Preview, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if reason == "" {
		return nil, fmt.Errorf("%w: a replay needs a reason, for the audit trail", ErrScope)
	}
	replayID := newReplayID()
	var preview *Preview
	var jobs []job
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		cands, err := selectCandidates(ctx, tx, s, true)
		if err != nil {
			return err
		}
		preview = summarize(s, cands)
		preview.DryRun, preview.ReplayID = false, replayID
		if err := countExcluded(ctx, tx, s, preview); err != nil {
			return err
		}
		var ids []string
		for _, c := range cands {
			raw, err := deadletter.ReplayJob(messages.DeadLetter{DeadLetterID: c.ID, ReplayGen: c.ReplayGen, Payload: c.Payload}, replayID)
			if err != nil {
				continue
			}
			jobs = append(jobs, job{id: c.ID, source: c.Source, msgID: messages.ReplayMsgID(c.ID, c.ReplayGen+1), raw: raw})
			ids = append(ids, c.ID)
		}
		if err := insertAudit(ctx, tx, auditRecord{id: replayID, action: ActionReplay, by: requestedBy, reason: reason,
			scope: s, selected: len(cands), alreadyStored: preview.AlreadyStored}); err != nil {
			return err
		}
		return deadletter.MarkReplayed(ctx, tx, replayID, ids)
	})
	if err != nil {
		return nil, err
	}
	dispatched, failed, derr := dispatch(ctx, js, jobs, s.RatePerSecond)
	preview.Dispatched = len(dispatched)
	if len(failed) > 0 {
		derr = errors.Join(derr, deadletter.UnmarkReplayed(ctx, pool, replayID, failed))
	}
	derr = errors.Join(derr, recordDispatched(ctx, pool, replayID, len(dispatched)))
	if derr != nil {
		return preview, fmt.Errorf("dispatched %d of %d (the rest are unmarked; run the replay again): %w", len(dispatched), len(jobs), derr)
	}
	return preview, nil
}

// recordDispatched records in replay replayID's audit row how many of
// its jobs JetStream acknowledged. It runs even when ctx is cancelled.
func recordDispatched(ctx context.Context, db execer, replayID string, n int) error {
	// replay_audit is append-only below the schema's owner; its
	// record_replay_dispatched (migration 20) sets the count once.
	_, err := db.Exec(context.WithoutCancel(ctx), `SELECT record_replay_dispatched($1, $2)`, replayID, n)
	return err
}

func newReplayID() string {
	return newID("rp")
}

func newID(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}
