package backfill

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Pipelines returns the pipeline bound to generation gen's store and
// model, or nil when gen is dropped or unknown: its chunks are
// acknowledged and forgotten.
type Pipelines func(ctx context.Context, gen int) (*pipeline.Pipeline, error)

// Processor processes batches of the backfill durable: each message is
// one chunk a generation owes, a messages.BackfillJob.
type Processor struct {
	pipelines Pipelines
}

// NewProcessor returns a Processor that hands each generation's chunks
// to its pipeline.
func NewProcessor(p Pipelines) *Processor { return &Processor{pipelines: p} }

// Encode is the backfill message of a queued chunk: its
// messages.BackfillJob.
func Encode(o generation.Owed) ([]byte, error) {
	j := messages.BackfillJob{Schema: messages.BackfillJobSchema, Generation: o.Generation, DocID: o.DocID,
		ChunkIndex: o.ChunkIndex, DocVersion: o.Version, ContentHash: o.ContentHash, SourceID: o.SourceID}
	raw, err := j.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode the chunk %d of %s owed to generation %d: %w", o.ChunkIndex, o.DocID, o.Generation, err)
	}
	return raw, nil
}

// Decode is the chunk a backfill message names (messages.DecodeBackfillJob).
func Decode(raw []byte) (generation.Owed, error) {
	j, err := messages.DecodeBackfillJob(raw)
	if err != nil {
		return generation.Owed{}, fmt.Errorf("decode backfill message: %w", err)
	}
	return generation.Owed{Generation: j.Generation, DocID: j.DocID, ChunkIndex: j.ChunkIndex, Version: j.DocVersion,
		ContentHash: j.ContentHash, SourceID: j.SourceID}, nil
}

// Process decides an outcome for every job, as pipeline.Pipeline.Process
// does, and returns an error only when the database could not answer or
// commit.
func (p *Processor) Process(ctx context.Context, jobs []*pipeline.Job) error {
	type group struct {
		jobs []*pipeline.Job
		owed []generation.Owed
	}
	groups := map[int]*group{}
	var order []int
	for _, j := range jobs {
		o, err := Decode(j.Raw)
		if err != nil {
			pipeline.FailUndecodable(j, err)
			continue
		}
		g := groups[o.Generation]
		if g == nil {
			g = &group{}
			groups[o.Generation] = g
			order = append(order, o.Generation)
		}
		g.jobs, g.owed = append(g.jobs, j), append(g.owed, o)
	}
	var errs []error
	for _, gen := range order {
		g := groups[gen]
		pipe, err := p.pipelines(ctx, gen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pipe == nil {
			for _, j := range g.jobs {
				j.Outcome = pipeline.Superseded
			}
			continue
		}
		if err := pipe.Backfill(ctx, g.jobs, g.owed); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
