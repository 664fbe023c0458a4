package pipeline

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// twins maps each job sent to the embedder to the jobs of its batch
// whose text is the same: they take its answer instead of being sent.
type twins map[*Job][]*Job

// reuse gives every job whose text the store already holds a vector of
// (same generation, model and dimension) that vector, and of the jobs
// left that share a text keeps the first: it returns the jobs to send to
// the embedder, and the twins that wait for their answer. The store is
// asked once for the whole batch. A lookup that fails is a database
// error like the store's: the caller holds the batch, and no chunk is
// failed or parked for it.
func (p *Pipeline) reuse(ctx context.Context, jobs []*Job) ([]*Job, twins, error) {
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	hashes := make([]vectorstore.TextHash, len(jobs))
	first := make(map[vectorstore.TextHash]*Job, len(jobs))
	distinct := make([]vectorstore.TextHash, 0, len(jobs))
	for i, j := range jobs {
		hashes[i] = vectorstore.HashText(j.chunk.Text)
		j.textHash = hashes[i]
		if _, ok := first[hashes[i]]; !ok {
			first[hashes[i]] = j
			distinct = append(distinct, hashes[i])
		}
	}
	var stored map[vectorstore.TextHash][]float32
	if r, ok := p.store.(vectorstore.Reuser); ok {
		var err error
		if stored, err = r.Reusable(ctx, p.pool, p.cfg.Model, distinct); err != nil {
			return nil, nil, fmt.Errorf("reuse stored vectors: %w", err)
		}
	}
	send := jobs[:0:0]
	tw := twins{}
	for i, j := range jobs {
		if vec, ok := stored[hashes[i]]; ok {
			// Jobs of one batch share the slice: nothing writes a vector
			// after it is set.
			j.vector = vec
			p.reused.Inc()
			continue
		}
		if lead := first[hashes[i]]; lead != j {
			tw[lead] = append(tw[lead], j)
			continue
		}
		send = append(send, j)
	}
	return send, tw, nil
}

// share hands each embedded job's answer to its twins: its vector, or
// its failure, routed by each twin's own delivery budget.
func (p *Pipeline) share(tw twins) {
	for lead, jobs := range tw {
		for _, j := range jobs {
			switch {
			case lead.vector != nil:
				j.vector = lead.vector
				p.reused.Inc()
			case lead.Failure != nil:
				p.fail(j, lead.Failure.Stage, lead.Failure.Err)
			default:
				p.fail(j, StageEmbed, classify.Retryable(classify.ClassServerError,
					fmt.Errorf("the chunk of the same text it waited on was neither embedded nor failed")))
			}
		}
	}
}
