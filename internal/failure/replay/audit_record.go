package replay

import "context"

// AuditRecord is one replay_audit row a replay of another kind (a
// parked file's, see package parkedfile) records, with the fields of
// this package's own.
type AuditRecord struct {
	// ReplayID names the row; NewReplayID makes one.
	ReplayID string
	// Action is one of Actions.
	Action string
	// By names who asked, Reason why.
	By, Reason string
	// Scope is what the replay selected, as JSON.
	Scope any
	// DryRun is true for a preview.
	DryRun bool
	// Selected counts the dead letters selected.
	Selected int
}

// RecordAudit writes r to replay_audit, in db (a transaction, a pool).
func RecordAudit(ctx context.Context, db execer, r AuditRecord) error {
	return insertAudit(ctx, db, auditRecord{id: r.ReplayID, action: r.Action, by: r.By, reason: r.Reason,
		scope: r.Scope, dryRun: r.DryRun, selected: r.Selected})
}

// RecordDispatched records that replay replayID dispatched n dead
// letters, once.
func RecordDispatched(ctx context.Context, db execer, replayID string, n int) error {
	return recordDispatched(ctx, db, replayID, n)
}

// NewReplayID returns a new replay id, of an executed replay.
func NewReplayID() string { return newReplayID() }

// NewDryRunID returns a new id of a preview.
func NewDryRunID() string { return newID("dr") }

// TextDiff is a unified line diff of before and after, bounded as a
// correction's is (MaxDiffLines a side); truncated says one was longer.
func TextDiff(before, after string) (diff string, truncated bool) { return unifiedDiff(before, after) }
