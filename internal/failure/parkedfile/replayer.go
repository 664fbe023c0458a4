package parkedfile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Why a parked file's replay is refused, beside the errors of package
// replay (ErrNoDeadLetter, ErrEscalated, ErrResolved, ErrInFlight,
// ErrCorrection), which it returns for the same reasons.
var (
	// ErrNotParkedFile is a dead letter that is not a parked file's: a
	// chunk's (replay it with sluice dlq replay --stage or correct it).
	ErrNotParkedFile = errors.New("dead letter is not a parked file")
	// ErrNotKept is a parked file whose bytes are not kept (over the
	// cap, read from stdin, or purged): only keyed text can replay it.
	ErrNotKept = errors.New("parked file's bytes are not kept")
)

// Outcomes of an executed replay.
const (
	// Stored: the document was read and recorded as a new version, its
	// chunks published (or escalated) and the dead letter resolved.
	Stored = "stored"
	// Empty: the document was read and holds no text.
	Empty = "empty"
	// ParkedAgain: it failed again and is parked with its new class.
	ParkedAgain = "parked_again"
)

// Scope is what a parked file's replay selected, as its replay_audit row
// records it.
type Scope struct {
	DeadLetterID   string `json:"dead_letter_id"`
	DocID          string `json:"doc_id"`
	Source         string `json:"source"`
	SourceNativeID string `json:"source_native_id"`
	Version        int64  `json:"version"`
	Class          string `json:"error_class"`
	// Origin is "kept_bytes" or "keyed_text".
	Origin string `json:"origin"`
	SHA256 string `json:"sha256,omitempty"`
	Bytes  int64  `json:"bytes"`
	// Password says a password was given (never what it is).
	Password bool `json:"password,omitempty"`
	// AcceptOCR says the operator stores the scan's OCR text below its
	// bar; the audit row's reason says why.
	AcceptOCR bool `json:"accept_ocr,omitempty"`
	// TextDiff is keyed text's diff from nothing, bounded; Withheld names
	// the secret rule it matches instead, leaving the diff out.
	TextDiff  string `json:"text_diff,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Withheld  string `json:"withheld,omitempty"`
}

// Report is what a replay did or, dry, would do.
type Report struct {
	ReplayID string `json:"replay_id"`
	DryRun   bool   `json:"dry_run"`
	Scope
	// Outcome is Stored, Empty or ParkedAgain once executed.
	Outcome string `json:"outcome,omitempty"`
	// NewClass is the class it is parked in again.
	NewClass string `json:"new_error_class,omitempty"`
	// Chunks counts the chunks published; RunID is the producer run
	// that recorded the new version.
	Chunks int    `json:"chunks_published"`
	RunID  string `json:"run_id,omitempty"`
}

// Replayer replays parked files.
type Replayer struct {
	pool *pgxpool.Pool
	js   jetstream.JetStream
	log  zerolog.Logger
}

// New returns a Replayer that records in pool and publishes to js.
func New(pool *pgxpool.Pool, js jetstream.JetStream, log zerolog.Logger) *Replayer {
	return &Replayer{pool: pool, js: js, log: log}
}

// DryRun shows what replaying dead letter id would do and changes
// nothing but the audit trail (a dry_run row, or correct for keyed
// text). It refuses what Execute would refuse, with the same errors.
func (r *Replayer) DryRun(ctx context.Context, id string, opts Options) (*Report, error) {
	s, _, err := r.prepare(ctx, r.pool, id, opts, false)
	if err != nil {
		return nil, err
	}
	rep := &Report{ReplayID: replay.NewDryRunID(), DryRun: true, Scope: *s}
	if err := replay.RecordAudit(ctx, r.pool, replay.AuditRecord{ReplayID: rep.ReplayID, Action: action(opts, true),
		By: opts.By, Reason: opts.Reason, Scope: rep.Scope, DryRun: true, Selected: 1}); err != nil {
		return nil, err
	}
	return rep, nil
}

// Execute replays dead letter id: in one transaction it checks and locks
// it, records the replay_audit row and marks it replayed; then it reads
// the kept bytes (or the keyed text) as the producer reads a file and
// records and publishes a new version of the document through the
// producer. A run that fails before recording anything takes the mark
// back, so the dead letter can be replayed again.
func (r *Replayer) Execute(ctx context.Context, id string, opts Options) (*Report, error) {
	if opts.Reason == "" {
		return nil, fmt.Errorf("%w: a replay of a parked file needs a reason, for the audit trail", replay.ErrCorrection)
	}
	replayID := replay.NewReplayID()
	var s *Scope
	var pf messages.ParkedFile
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var err error
		if s, pf, err = r.prepare(ctx, tx, id, opts, true); err != nil {
			return err
		}
		if err := replay.RecordAudit(ctx, tx, replay.AuditRecord{ReplayID: replayID, Action: action(opts, false),
			By: opts.By, Reason: opts.Reason, Scope: *s, Selected: 1}); err != nil {
			return err
		}
		return deadletter.MarkReplayed(ctx, tx, replayID, []string{id})
	})
	if err != nil {
		return nil, err
	}
	rep := &Report{ReplayID: replayID, Scope: *s}
	if err := r.run(ctx, rep, pf, opts); err != nil {
		uerr := deadletter.UnmarkReplayed(ctx, r.pool, replayID, []string{id})
		return rep, errors.Join(fmt.Errorf("replay %s: %w", id, err), uerr)
	}
	if err := replay.RecordDispatched(ctx, r.pool, replayID, 1); err != nil {
		return rep, fmt.Errorf("replay %s: %w", id, err)
	}
	return rep, nil
}

// action is the replay_audit action of a replay with opts.
func action(opts Options, dry bool) string {
	switch {
	case opts.Text != nil:
		return replay.ActionCorrect
	case dry:
		return replay.ActionDryRun
	}
	return replay.ActionReplay
}

// prepare reads and checks dead letter id (locking it with lock) and
// returns the replay's scope and the parked file.
func (r *Replayer) prepare(ctx context.Context, q deadletter.Reader, id string, opts Options, lock bool) (*Scope, messages.ParkedFile, error) {
	c, err := deadletter.ReadCorrectable(ctx, q, id, lock)
	if errors.Is(err, deadletter.ErrNotFound) {
		return nil, messages.ParkedFile{}, fmt.Errorf("%w: %s (see sluice dlq ls)", replay.ErrNoDeadLetter, id)
	}
	if err != nil {
		return nil, messages.ParkedFile{}, err
	}
	if err := refusal(c, id); err != nil {
		return nil, messages.ParkedFile{}, err
	}
	if opts.OCR.Accept && c.Class != classify.ClassOCRLowConfidence {
		return nil, messages.ParkedFile{}, fmt.Errorf("%w: %s is parked as %s: accepting OCR text is for %s dead letters", replay.ErrCorrection, id, c.Class, classify.ClassOCRLowConfidence)
	}
	pf, err := messages.DecodeParkedFile(c.Payload)
	if err != nil {
		return nil, pf, fmt.Errorf("%w: %s: its payload is a chunk's; replay it with sluice dlq replay --stage, or correct it", ErrNotParkedFile, id)
	}
	s := &Scope{DeadLetterID: id, DocID: c.DocID, Source: c.Source, SourceNativeID: c.NativeID, Version: c.Version,
		Class: c.Class, Password: opts.Password != "", AcceptOCR: opts.OCR.Accept}
	if opts.Text != nil {
		return s, pf, keyed(s, *opts.Text, opts.Producer.Secrets)
	}
	k, ok, err := deadletter.KeptFileOf(ctx, q, id)
	switch {
	case err != nil:
		return nil, pf, err
	case !ok:
		why := pf.NotKeptReason
		if why == "" {
			why = "parked before bytes were kept, or purged by retention"
		}
		return nil, pf, fmt.Errorf("%w: %s: %s; key its text in with sluice dlq correct --id %s --text FILE", ErrNotKept, id, why, id)
	}
	s.Origin, s.SHA256, s.Bytes = "kept_bytes", k.SHA256, k.Size
	return s, pf, nil
}

// keyed fills the scope of keyed text, refusing text that cannot be a
// document.
func keyed(s *Scope, text string, screen secrets.Config) error {
	switch {
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: the keyed text is not UTF-8", replay.ErrCorrection)
	case strings.TrimSpace(text) == "":
		return fmt.Errorf("%w: the keyed text is empty", replay.ErrCorrection)
	}
	s.Origin, s.Bytes = "keyed_text", int64(len(text))
	if found := screen.ScanDocument(text, nil, []secrets.Span{{Start: 0, End: len(text)}}); len(found) > 0 {
		s.Withheld = found[0].Rule
		return nil
	}
	s.TextDiff, s.Truncated = replay.TextDiff("", text)
	return nil
}

// refusal says why the dead letter c is not replayed, or nil.
func refusal(c *deadletter.Correctable, id string) error {
	switch {
	case c.Escalated:
		return fmt.Errorf("%w: %s is never replayed: resolve it by its policy", replay.ErrEscalated, id)
	case c.Resolved:
		return fmt.Errorf("%w: %s: its document was stored or superseded since; nothing to replay", replay.ErrResolved, id)
	case c.Payload == nil:
		return fmt.Errorf("%w: %s has no payload (purged by retention)", ErrNotKept, id)
	case c.Dispatched:
		return fmt.Errorf("%w: %s was replayed by %s and has not failed since; wait for its outcome (sluice dlq audit)", replay.ErrInFlight, id, c.DispatchedBy)
	}
	return nil
}

// run records and publishes the replayed version through a producer.
func (r *Replayer) run(ctx context.Context, rep *Report, pf messages.ParkedFile, opts Options) error {
	w, err := r.walker(ctx, rep.Scope, pf, opts)
	if err != nil {
		return err
	}
	defer w.close()
	cfg := opts.Producer
	cfg.SourceID, cfg.RunID, cfg.Reread = rep.Source, "", true
	p, err := producer.New(cfg, r.pool, r.js, r.log)
	if err != nil {
		return err
	}
	p.OpenFile, p.Files = w.open, w.files
	sum, err := p.Run(ctx, w)
	rep.RunID, rep.Chunks = sum.RunID, sum.Chunks
	if err != nil {
		return err
	}
	switch {
	case sum.Failed > 0:
		rep.Outcome, rep.NewClass = ParkedAgain, w.class()
	case sum.Empty > 0:
		rep.Outcome = Empty
	default:
		rep.Outcome = Stored
	}
	return nil
}

// IsParkedFile reports whether dead letter id is a parked file's: its
// payload is a messages.ParkedFile. An unknown id is not.
func (r *Replayer) IsParkedFile(ctx context.Context, id string) (bool, error) {
	c, err := deadletter.ReadCorrectable(ctx, r.pool, id, false)
	if errors.Is(err, deadletter.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = messages.DecodeParkedFile(c.Payload)
	return err == nil, nil
}
