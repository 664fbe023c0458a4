package pipeline

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
)

// budget is what one source's chunks may spend: the part of the
// per-source policy the pipeline applies.
type budget struct {
	maxDeliveries, ambiguousRetries, maxReplays int
	backoff                                     classify.Backoff
	softTimeLimit                               time.Duration
	halt                                        runs.Threshold
	// batchAttempts is how many provider batches a chunk may go
	// through; 0 when the source is live.
	batchAttempts int
}

// budget returns source's budget: its policy when the pipeline has one,
// Config otherwise. The backoff keeps Config's random source, which tests
// fix.
func (p *Pipeline) budget(source string) budget {
	if p.sources == nil {
		return budget{maxDeliveries: p.cfg.MaxDeliveries, ambiguousRetries: p.cfg.AmbiguousRetries,
			maxReplays: p.cfg.MaxReplays, backoff: p.cfg.Backoff, softTimeLimit: p.cfg.SoftTimeLimit,
			halt: runs.Threshold{RejectionRatio: p.cfg.HaltRejectionRatio, MinChunks: p.cfg.HaltMinChunks}}
	}
	s := p.sources.For(source)
	return budget{maxDeliveries: s.MaxDeliveries, ambiguousRetries: s.AmbiguousRetries, maxReplays: s.MaxReplays,
		backoff:       classify.Backoff{Base: s.BackoffBase, Max: s.BackoffMax, Rand: p.cfg.Backoff.Rand},
		softTimeLimit: s.SoftTimeLimit,
		halt:          runs.Threshold{RejectionRatio: s.HaltRejectionRatio, MinChunks: s.HaltMinChunks},
		batchAttempts: batchAttempts(s)}
}

// batchAttempts is s's batch attempts when the source is in bulk mode,
// 0 when it is live.
func batchAttempts(s policy.Settings) int {
	if s.Mode != policy.ModeBatch {
		return 0
	}
	return s.BatchAttempts
}

// judgeRuns halts the runs whose rejection ratio this batch pushed over
// their source's threshold. Only a run that had a chunk parked here can
// have crossed it, so healthy runs cost nothing. A failure to judge is
// logged, not returned: the outcomes are committed, and the next parked
// chunk judges again.
func (p *Pipeline) judgeRuns(ctx context.Context, jobs []*Job) {
	judged := map[string]bool{}
	for _, j := range jobs {
		c := &j.chunk
		if j.Outcome != Parked || j.Replay || c.RunID == "" || judged[c.RunID] {
			continue
		}
		judged[c.RunID] = true
		t := p.budget(c.SourceID).halt
		halted, reason, err := runs.Judge(ctx, p.pool, c.RunID, t)
		if err != nil {
			p.log.Warn().Err(err).Str("run_id", c.RunID).Msg("could not judge the run's rejection ratio")
			continue
		}
		if halted {
			p.metrics.RunsHalted.WithLabelValues(c.SourceID).Inc()
			p.log.Warn().Str("run_id", c.RunID).Str("source_id", c.SourceID).Str("reason", reason).
				Msg("run halted: its jobs are held until an operator resumes or cancels it")
		}
	}
}
