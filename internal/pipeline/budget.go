package pipeline

import (
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// budget is what one source's chunks may spend: the part of the
// per-source policy the pipeline applies.
type budget struct {
	maxDeliveries, ambiguousRetries, maxReplays int
	backoff                                     classify.Backoff
	softTimeLimit                               time.Duration
}

// budget returns source's budget: its policy when the pipeline has one,
// Config otherwise. The backoff keeps Config's random source, which tests
// fix.
func (p *Pipeline) budget(source string) budget {
	if p.sources == nil {
		return budget{maxDeliveries: p.cfg.MaxDeliveries, ambiguousRetries: p.cfg.AmbiguousRetries,
			maxReplays: p.cfg.MaxReplays, backoff: p.cfg.Backoff, softTimeLimit: p.cfg.SoftTimeLimit}
	}
	s := p.sources.For(source)
	return budget{maxDeliveries: s.MaxDeliveries, ambiguousRetries: s.AmbiguousRetries, maxReplays: s.MaxReplays,
		backoff:       classify.Backoff{Base: s.BackoffBase, Max: s.BackoffMax, Rand: p.cfg.Backoff.Rand},
		softTimeLimit: s.SoftTimeLimit}
}
