package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/store/generation"
)

// Pipelines returns the pipeline bound to generation gen's store and
// model, or nil when gen is dropped or unknown: its chunks are
// acknowledged and forgotten.
type Pipelines func(ctx context.Context, gen int) (*pipeline.Pipeline, error)

// Processor processes batches of the backfill durable: each message is
// one chunk a generation owes, as generation.Owed in JSON.
type Processor struct {
	pipelines Pipelines
}

// NewProcessor returns a Processor that hands each generation's chunks
// to its pipeline.
func NewProcessor(p Pipelines) *Processor { return &Processor{pipelines: p} }

// Encode is a backfill message's body.
func Encode(o generation.Owed) ([]byte, error) { return json.Marshal(o) }

// Decode parses a backfill message's body.
func Decode(raw []byte) (generation.Owed, error) {
	var o generation.Owed
	if err := json.Unmarshal(raw, &o); err != nil {
		return o, fmt.Errorf("decode backfill message: %w", err)
	}
	switch {
	case o.Generation <= generation.First:
		return o, fmt.Errorf("backfill message for generation %d: only later generations are backfilled", o.Generation)
	case o.DocID == "" || o.ChunkIndex < 0 || o.Version < 1 || o.ContentHash == "" || o.SourceID == "":
		return o, errors.New("backfill message lacks its chunk's key, version, content hash or source")
	}
	return o, nil
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
