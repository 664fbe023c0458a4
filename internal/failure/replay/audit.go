package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// Actions recorded in replay_audit.
const (
	// ActionReplay is an executed replay.
	ActionReplay = "replay"
	// ActionDryRun is a preview: nothing was marked or dispatched.
	ActionDryRun = "dry_run"
	// ActionPause and ActionResume act on the replay durables.
	ActionPause  = "pause"
	ActionResume = "resume"
	// ActionCorrect is a replay of one dead letter with a corrected
	// payload (Correction), dry or executed; its scope holds the diff.
	ActionCorrect = "correct"
)

// Actions lists every action, in the order a filter offers them.
var Actions = []string{ActionReplay, ActionDryRun, ActionPause, ActionResume, ActionCorrect}

// Dispatches reports whether entries of action dispatch jobs, and so
// have outcomes (stored, parked again, in flight).
func Dispatches(action string) bool {
	return action == ActionReplay || action == ActionCorrect
}

// auditRecord is one replay_audit row to write.
type auditRecord struct {
	id, action, by, reason  string
	scope                   any
	dryRun                  bool
	selected, alreadyStored int
}

type execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// insertAudit writes r. An empty reason or requester is stored as NULL.
func insertAudit(ctx context.Context, db execer, r auditRecord) error {
	scope, err := json.Marshal(r.scope)
	if err != nil {
		return fmt.Errorf("record %s: %w", r.action, err)
	}
	if _, err := db.Exec(ctx, `
		INSERT INTO replay_audit (replay_id, action, requested_by, reason, scope, dry_run, selected, already_stored)
		VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5, $6, $7, $8)`,
		r.id, r.action, r.by, r.reason, scope, r.dryRun, r.selected, r.alreadyStored); err != nil {
		return fmt.Errorf("record %s: %w", r.action, err)
	}
	return nil
}

// AuditEntry is one replay_audit row with the outcome of its replay.
//
// Outcomes are computed when read, from dead_letter_history, which a
// trigger on dead_letters fills for every writer: a dead letter the
// replay marked ("replayed" event, never "unmarked" since) counts as
// ParkedAgain once a failure of the generation the replay dispatched is
// recorded, and otherwise as Stored once its row is resolved under that
// replay id. Nothing has to remember to update the audit, and a replay
// whose jobs are still in flight shows InFlight.
type AuditEntry struct {
	ReplayID    string          `json:"replay_id"`
	Action      string          `json:"action"`
	RequestedAt time.Time       `json:"requested_at"`
	RequestedBy string          `json:"requested_by"`
	Reason      string          `json:"reason"`
	Scope       json.RawMessage `json:"scope"`
	DryRun      bool            `json:"dry_run"`
	// Selected, Dispatched and AlreadyStored are as the replay reported
	// them (see Preview).
	Selected      int `json:"selected"`
	Dispatched    int `json:"dispatched"`
	AlreadyStored int `json:"already_have_vector"`
	// Stored counts dispatched dead letters resolved since: their chunk was
	// stored (or superseded by a newer version).
	Stored int `json:"stored"`
	// ParkedAgain counts dispatched dead letters that failed again.
	ParkedAgain int `json:"parked_again"`
	// InFlight counts the dispatched ones with no outcome yet.
	InFlight int `json:"in_flight"`
}

// AuditFilter selects audit entries. Zero values do not filter.
type AuditFilter struct {
	// Action is one of Actions.
	Action string
	// RequestedBy selects one principal, as recorded (cli:alice).
	RequestedBy string
	// Since and Until bound requested_at.
	Since, Until time.Time
	// Limit caps the entries, newest first. Defaults to 50.
	Limit int
}

// DefaultAuditLimit is AuditFilter.Limit's default.
const DefaultAuditLimit = 50

// Validate says how to fix a filter.
func (f AuditFilter) Validate() error {
	if f.Action != "" && !slices.Contains(Actions, f.Action) {
		return fmt.Errorf("action %q: use one of %s", f.Action, strings.Join(Actions, ", "))
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	if f.Limit < 0 || f.Limit > MaxLimit {
		return fmt.Errorf("limit %d: want 1..%d", f.Limit, MaxLimit)
	}
	return nil
}

// auditSQL reads replay_audit; $1..$5 are the filter, $6 the limit.
const auditSQL = `
	SELECT a.replay_id, a.action, a.requested_at, coalesce(a.requested_by, ''), coalesce(a.reason, ''),
	       a.scope, a.dry_run, a.selected, a.dispatched, a.already_stored
	FROM replay_audit a
	WHERE ($1 = '' OR a.action = $1) AND ($2 = '' OR a.requested_by = $2)
	  AND ($3::timestamptz IS NULL OR a.requested_at >= $3) AND ($4::timestamptz IS NULL OR a.requested_at < $4)
	  AND ($5 = '' OR a.replay_id = $5)
	ORDER BY a.requested_at DESC, a.replay_id DESC
	LIMIT $6`

// ListAudit returns the audit entries f selects, newest first.
func ListAudit(ctx context.Context, pool *pgxpool.Pool, f AuditFilter) ([]AuditEntry, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScope, err)
	}
	if f.Limit == 0 {
		f.Limit = DefaultAuditLimit
	}
	return readAudit(ctx, pool, f, "")
}

// AuditOf returns the audit entry of one replay, dry run or action; false
// when there is none.
func AuditOf(ctx context.Context, pool *pgxpool.Pool, id string) (AuditEntry, bool, error) {
	out, err := readAudit(ctx, pool, AuditFilter{Limit: 1}, id)
	if err != nil || len(out) == 0 {
		return AuditEntry{}, false, err
	}
	return out[0], true, nil
}

func readAudit(ctx context.Context, pool *pgxpool.Pool, f AuditFilter, id string) ([]AuditEntry, error) {
	rows, err := pool.Query(ctx, auditSQL, f.Action, f.RequestedBy, nullTime(f.Since), nullTime(f.Until), id, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("read replay audit: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ReplayID, &e.Action, &e.RequestedAt, &e.RequestedBy, &e.Reason, &e.Scope, &e.DryRun,
			&e.Selected, &e.Dispatched, &e.AlreadyStored)
		e.RequestedAt = e.RequestedAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read replay audit: %w", err)
	}
	var dispatching []string
	for _, e := range out {
		if Dispatches(e.Action) && !e.DryRun {
			dispatching = append(dispatching, e.ReplayID)
		}
	}
	outcomes, err := deadletter.ReplayOutcomes(ctx, pool, dispatching)
	if err != nil {
		return nil, fmt.Errorf("read replay audit: %w", err)
	}
	for i := range out {
		e := &out[i]
		if Dispatches(e.Action) && !e.DryRun {
			o := outcomes[e.ReplayID]
			e.Stored, e.ParkedAgain = o.Stored, o.ParkedAgain
		}
		e.InFlight = max(e.Dispatched-e.Stored-e.ParkedAgain, 0)
	}
	if out == nil {
		out = []AuditEntry{}
	}
	return out, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
