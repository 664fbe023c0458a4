package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// flights are the texts the pipeline's batches are embedding at this
// moment, by hash, and those embedded but not yet committed: a batch that
// needs a text another batch of the same process is already sending
// waits for that answer, or takes it once given, instead of paying for
// the text twice. The store's lookup (reuse) finds what is committed;
// this finds what is on its way there, up to the commit, so that no
// window is left between the answer and the commit in which a repeat
// is sent again. It holds nothing once every batch is done: a crash
// loses only the sharing, never a chunk.
type flights struct {
	mu sync.Mutex
	m  map[vectorstore.TextHash]*flight
}

// flight is one text being embedded; done is closed once vector is set,
// or left nil because the text failed.
type flight struct {
	done   chan struct{}
	vector []float32
}

// claim splits jobs, whose texts the store holds no vector of, into
// those this batch embeds (each text's flight is now its own) and those
// whose text another batch is embedding, with that batch's flight.
func (fs *flights) claim(jobs []*Job) (own []*Job, waiting map[*Job]*flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[vectorstore.TextHash]*flight{}
	}
	for _, j := range jobs {
		if f, ok := fs.m[j.textHash]; ok {
			if waiting == nil {
				waiting = map[*Job]*flight{}
			}
			waiting[j] = f
			continue
		}
		fs.m[j.textHash] = &flight{done: make(chan struct{})}
		own = append(own, j)
	}
	return own, waiting
}

// land ends the flights of own, handing each answer (or its absence) to
// whoever waits on it or claims its text until forget.
func (fs *flights) land(own []*Job) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, j := range own {
		f := fs.m[j.textHash]
		f.vector = j.vector
		close(f.done)
	}
}

// forget drops the landed flights of own, once their batch has committed
// its vectors or given up: from then on the store's lookup finds them.
func (fs *flights) forget(own []*Job) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, j := range own {
		delete(fs.m, j.textHash)
	}
}

// await gives each waiting job its flight's vector and returns the jobs
// whose flight brought none (the text failed in the other batch, by that
// batch's budget): they are embedded again by their own. A job whose
// context ends first fails, to be retried by redelivery.
func (p *Pipeline) await(ctx context.Context, waiting map[*Job]*flight) []*Job {
	var again []*Job
	for j, f := range waiting {
		select {
		case <-f.done:
		case <-ctx.Done():
			p.fail(j, StageEmbed, classify.Retryable(classify.ClassTimeout,
				fmt.Errorf("waiting for another batch's answer for the same text: %w", context.Cause(ctx))))
			continue
		}
		if f.vector == nil {
			again = append(again, j)
			continue
		}
		j.vector = f.vector
		p.reused.Inc()
	}
	return again
}
