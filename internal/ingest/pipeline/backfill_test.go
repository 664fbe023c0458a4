package pipeline_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// A chunk owed twice in one backfill batch (queued by its store
// transaction and by a scan) is stored once: the other message is a
// duplicate, acknowledged, and the batch fails for neither.
func TestBackfillStoresAChunkOwedTwiceOnce(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	ctx := context.Background()
	b.produce("twice", map[string]string{"a.txt": passage(1)})
	live := b.jobs(1)
	b.process(b.pipeline(b.client()), live)
	if live[0].Outcome != pipeline.Stored {
		t.Fatalf("generation 1: outcome %v", live[0].Outcome)
	}
	created, err := generation.New(b.db.Pool).Create(ctx, generation.Spec{Model: "embed-sim-2", Dims: 2 * dims,
		Chunking: generation.Chunking{Size: 400, Overlap: 0, Unit: "chars"}}, generation.Request{By: "test", Reason: "r", Execute: true})
	if err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.OpenGeneration(ctx, b.db.Pool, created.Generation, 2*dims)
	if err != nil {
		t.Fatal(err)
	}
	client, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: "embed-sim-2", Dims: 2 * dims})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Pool: b.db.Pool, Store: store, Embedder: client, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	c := live[0].Chunk()
	o := generation.Owed{Generation: created.Generation, DocID: c.DocID, ChunkIndex: c.ChunkIndex, Version: c.DocVersion,
		ContentHash: c.ContentHash, SourceID: c.SourceID}
	jobs := []*pipeline.Job{{Delivered: 1}, {Delivered: 1}}
	if err := p.Backfill(ctx, jobs, []generation.Owed{o, o}); err != nil {
		t.Fatal(err)
	}
	if jobs[0].Outcome != pipeline.Stored || jobs[1].Outcome != pipeline.Duplicate {
		t.Errorf("outcomes %v and %v (failures %+v, %+v), want stored and duplicate", jobs[0].Outcome, jobs[1].Outcome, jobs[0].Failure, jobs[1].Failure)
	}
	if n := b.count(`SELECT count(*) FROM generation_embeddings WHERE generation = $1 AND doc_id = $2`, created.Generation, c.DocID); n != 1 {
		t.Errorf("%d vectors of the chunk in generation %d, want 1", n, created.Generation)
	}
}
