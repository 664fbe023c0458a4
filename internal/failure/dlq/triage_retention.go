package dlq

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/failure/retention"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// RetentionSteps are the retention of everything a dead letter leaves
// behind, in the order a pass must run them: dead letters' payloads
// first, since the by-reference copies, the kept bytes of parked files
// (their references, then the contents no reference needs) and the
// parked chunks' jobs follow them; then history and escalated text. The statements of
// the dead letter tables are deadletter's, those of ingest_manifest and
// escalated_chunks manifest's, all run on the pool triage writes to.
func (t *Triage) RetentionSteps() []retention.Step {
	escalations := t.Bounds(policy.EscalationRetention)
	return []retention.Step{
		{Table: "dead_letters", Purge: t.PurgePayloads},
		{Table: "dead_letter_payloads", Purge: t.PurgeReferencedPayloads},
		{Table: "file_bytes_refs", Purge: func(ctx context.Context, _ time.Time, limit int) (int64, error) {
			return deadletter.PurgeFileRefs(ctx, t.pool, limit)
		}},
		{Table: "file_bytes", Purge: func(ctx context.Context, _ time.Time, limit int) (int64, error) {
			return deadletter.PurgeFileBytes(ctx, t.pool, limit)
		}},
		{Table: "ingest_manifest", Purge: func(ctx context.Context, _ time.Time, limit int) (int64, error) {
			return manifest.ClearParkedJobs(ctx, t.pool, limit)
		}},
		{Table: "dead_letter_history", Purge: t.PurgeHistory},
		{Table: "escalated_chunks", Purge: func(ctx context.Context, now time.Time, limit int) (int64, error) {
			return manifest.PurgeEscalatedText(ctx, t.pool, escalations, now, limit)
		}},
	}
}

// PurgePayloads is deadletter.PurgePayloads with this triage's
// retention.
func (t *Triage) PurgePayloads(ctx context.Context, now time.Time, limit int) (int64, error) {
	return deadletter.PurgePayloads(ctx, t.pool, now, t.Bounds(policy.PayloadRetention), t.Bounds(policy.EscalationRetention), limit)
}

// PurgeReferencedPayloads is deadletter.PurgeReferencedPayloads, keeping
// payloads TriageConfig.PayloadRetention.
func (t *Triage) PurgeReferencedPayloads(ctx context.Context, now time.Time, limit int) (int64, error) {
	return deadletter.PurgeReferencedPayloads(ctx, t.pool, now, t.opts.PayloadRetention, limit)
}

// PurgeHistory is deadletter.PurgeHistory with this triage's retention.
func (t *Triage) PurgeHistory(ctx context.Context, now time.Time, limit int) (int64, error) {
	return deadletter.PurgeHistory(ctx, t.pool, now, t.Bounds(policy.HistoryRetention), t.Bounds(policy.EscalationRetention), limit)
}

// Bounds returns one retention setting of every source, as the policy
// gives it or, without a policy, as TriageConfig does for every source.
// manifest.PurgeEscalatedText takes the escalations' from here too, so
// that an escalation's text and payload follow one setting.
func (t *Triage) Bounds(field func(policy.Settings) time.Duration) policy.Bounds {
	if t.opts.Policy != nil {
		return t.opts.Policy.Bounds(field)
	}
	return policy.Bounds{Default: field(policy.Settings{PayloadRetention: t.opts.PayloadRetention,
		EscalationRetention: t.opts.EscalationRetention, HistoryRetention: t.opts.HistoryRetention}).Seconds()}
}
