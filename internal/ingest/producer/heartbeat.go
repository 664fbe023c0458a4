package producer

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/store/runs"
)

// beat beats the run's heartbeat every HeartbeatInterval, with the
// progress last reported, until the returned stop is called or ctx ends;
// stop returns once no beat is under way, so that none lands after the
// run's end is recorded. A producer that is killed stops beating, and
// its run ends interrupted once its chunks have settled (runs.Settle).
func (p *Producer) beat(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(p.cfg.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A beat later than the timeout is worth nothing.
			bctx, bcancel := context.WithTimeout(ctx, p.cfg.HeartbeatTimeout)
			err := runs.Beat(bctx, p.pool, p.cfg.RunID, p.current())
			bcancel()
			if err != nil && ctx.Err() == nil {
				p.log.Warn().Err(err).Str("run_id", p.cfg.RunID).
					Msg("could not beat the run's heartbeat; the run is taken for interrupted if no beat lands within its timeout")
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// report records the run's progress for the next beat.
func (p *Producer) report(sum Summary) {
	pr := progressOf(sum)
	p.beatProgress.Store(&pr)
}

// current is the progress last reported.
func (p *Producer) current() runs.Progress {
	if pr := p.beatProgress.Load(); pr != nil {
		return *pr
	}
	return runs.Progress{}
}

// progressOf is what sum says of the run's progress.
func progressOf(sum Summary) runs.Progress {
	return runs.Progress{Documents: sum.Seen, Published: sum.Chunks}
}
