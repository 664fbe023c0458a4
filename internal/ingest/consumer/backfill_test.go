package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/ingest/backfill"
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// laterModel and laterDims are the later generation's model and size.
const (
	laterModel = "embed-sim-large"
	laterDims  = 2 * dims
)

// startWithBackfill runs a consumer that also pulls the backfill durable,
// with its planner, as the service does, until the test ends.
func (b *bundle) startWithBackfill() {
	t := b.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	newPipe := func(gen, size int, model string) *pipeline.Pipeline {
		store, err := vectorstore.OpenGeneration(ctx, b.db.Pool, gen, size)
		if err != nil {
			t.Fatal(err)
		}
		client, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: model, Dims: size})
		if err != nil {
			t.Fatal(err)
		}
		emb, err := embedder.NewResilient(client, embedder.ResilientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		pipe, err := pipeline.New(pipeline.Config{MaxDeliveries: 3,
			Backoff: classify.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
			pipeline.Deps{Pool: b.db.Pool, Store: store, Embedder: emb, Compliance: compliance.NewChecker(compliance.DefaultRules(), nil), Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return pipe
	}
	live := newPipe(generation.First, dims, "embed-sim-1")
	var mu sync.Mutex
	later := map[int]*pipeline.Pipeline{}
	pipelines := func(ctx context.Context, gen int) (*pipeline.Pipeline, error) {
		g, err := generation.Get(ctx, b.db.Pool, gen)
		if err != nil {
			return nil, err
		}
		if g.Status == generation.Dropped {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if later[gen] == nil {
			later[gen] = newPipe(gen, g.Dims, g.Model)
		}
		return later[gen], nil
	}
	cfg := consumer.Config{BatchSize: 16, FetchWait: 50 * time.Millisecond, AckWait: b.topo.AckWait, Heartbeat: b.topo.AckWait / 4,
		Durables: []string{broker.WorkersConsumer, broker.ReplayConsumer, broker.BackfillConsumer}}
	c := consumer.New(cfg, consumer.Deps{JS: b.js, Pipeline: live, Log: zerolog.Nop(),
		Processors: map[string]consumer.Processor{broker.BackfillConsumer: backfill.NewProcessor(pipelines)}})
	planner := backfill.NewPlanner(backfill.Config{Backlog: 32, Page: 8, Interval: 50 * time.Millisecond, CheckInterval: 200 * time.Millisecond},
		backfill.Deps{Pool: b.db.Pool, JS: b.js, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	var wg sync.WaitGroup
	wg.Go(func() { planner.Run(ctx) })
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := <-done; err != nil {
			t.Errorf("consumer: %v", err)
		}
	})
}

func docs(prefix string, n int, extra string) map[string][]byte {
	out := map[string][]byte{}
	for i := range n {
		out[fmt.Sprintf("%s-%02d.txt", prefix, i)] = fmt.Appendf(nil, "%s document %d: the river carries silt %d times past the mill.%s", prefix, i, i*7, extra)
	}
	return out
}

// TestBackfillKeepsALaterGenerationComplete changes the model and the
// dimension (16 → 32) under live ingestion: documents stored before the
// new generation existed are backfilled from the text PostgreSQL holds,
// documents ingested, changed and deleted while it builds reach it (or
// leave it) too, a chunk only the new model rejects parks in the new
// generation alone, and once it is retried with the fault gone the
// generation becomes ready by itself, its vectors the new model's at the
// new size, one per served chunk.
func TestBackfillKeepsALaterGenerationComplete(t *testing.T) {
	b := setup(t, options{sim: embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{
		{Match: "LONG-FOR-THE-NEW-MODEL", Kind: embedsim.PoisonContextLength, Model: laterModel}}}}})
	ctx := context.Background()
	b.startWithBackfill()

	b.produce("src", docs("before", 12, ""))
	b.produce("odd", map[string][]byte{"odd.txt": []byte("this one is LONG-FOR-THE-NEW-MODEL and fine for the old one")})
	b.waitSettled(30 * time.Second)

	reg := generation.New(b.db.Pool)
	req := generation.Request{By: "test", Reason: "a larger model", Execute: true}
	created, err := reg.Create(ctx, generation.Spec{Model: laterModel, Dims: laterDims,
		Chunking: generation.Chunking{Size: 400, Overlap: 0, Unit: "chars"}}, req)
	if err != nil {
		t.Fatal(err)
	}
	gen := created.Generation

	// Live work goes on while the generation builds: new documents, a
	// changed one and a deleted one.
	b.produce("src", docs("during", 12, ""))
	changed := docs("before", 12, "")
	changed["before-03.txt"] = []byte("before document 3, rewritten while the new generation was building")
	b.produce("src", changed)
	var gone string
	if err := b.db.Pool.QueryRow(ctx, `SELECT doc_id FROM documents WHERE source_native_id LIKE '%before-07.txt'`).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if _, err := erase.New(b.db.Pool, nil).Delete(ctx, erase.Request{SourceID: "src", DocIDs: []string{gone}, By: "test", Reason: "removed at the source", Execute: true}); err != nil {
		t.Fatal(err)
	}
	b.waitSettled(30 * time.Second)

	g, err := generation.Get(ctx, b.db.Pool, gen)
	if err != nil {
		t.Fatal(err)
	}
	var p generation.Progress
	b.eventually(60*time.Second, "the new generation to owe nothing", func() bool {
		p, err = generation.ProgressOf(ctx, b.db.Pool, g)
		return err == nil && p.Owed == 0
	})
	if p.Parked != 1 {
		t.Fatalf("progress %+v: want the one chunk the new model rejects parked", p)
	}
	if n := b.count(`SELECT count(*) FROM generation_parked WHERE generation = $1 AND error_class = $2`, gen, classify.ClassContextLength); n != 1 {
		t.Errorf("%d chunks parked in generation %d as context_length_exceeded, want 1", n, gen)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings c JOIN documents d USING (doc_id) WHERE d.source_id = 'odd'`); n != 1 {
		t.Errorf("the old generation holds %d vectors of the chunk the new model rejects, want 1: parking is per generation", n)
	}
	if g, _ = generation.Get(ctx, b.db.Pool, gen); g.Status != generation.Building {
		t.Errorf("generation %d is %s with a parked chunk, want building", gen, g.Status)
	}

	// The fault goes (say, the chunk now fits), an operator retries, and
	// the generation completes with no other action.
	if err := b.sim.SetFaults(embedsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Retry(ctx, gen, req); err != nil {
		t.Fatal(err)
	}
	b.eventually(60*time.Second, "the new generation to become ready", func() bool {
		g, err = generation.Get(ctx, b.db.Pool, gen)
		return err == nil && g.Status == generation.Ready
	})
	if p, err = generation.ProgressOf(ctx, b.db.Pool, g); err != nil || !p.Complete() {
		t.Fatalf("ready with progress %+v (%v)", p, err)
	}

	// One vector per served chunk, of the new model at the new size, at
	// the chunk's current version and content; nothing of the deleted
	// document.
	served := b.count(`SELECT count(*) FROM ingest_manifest m JOIN documents d ON d.doc_id = m.doc_id AND d.version = m.version
		WHERE d.status = 'ready' AND m.status = 'stored'`)
	mismatched := b.count(`SELECT count(*) FROM ingest_manifest m JOIN documents d ON d.doc_id = m.doc_id AND d.version = m.version
		LEFT JOIN generation_embeddings v ON v.generation = $1 AND v.doc_id = m.doc_id AND v.chunk_index = m.chunk_index
		     AND v.version = m.version AND v.content_hash = m.content_hash AND v.model = $2 AND v.dims = $3
		WHERE d.status = 'ready' AND m.status = 'stored' AND v.doc_id IS NULL`, gen, laterModel, laterDims)
	if served == 0 || mismatched != 0 {
		t.Errorf("%d of %d served chunks lack a %s vector of %d dims at their version in generation %d", mismatched, served, laterModel, laterDims, gen)
	}
	if n := b.count(`SELECT count(*) FROM generation_embeddings WHERE doc_id = $1`, gone); n != 0 {
		t.Errorf("the deleted document has %d vectors in a later generation", n)
	}
	if n := b.count(`SELECT count(*) FROM generation_backfill_queue`); n != 0 {
		t.Errorf("%d chunks still queued", n)
	}

	// Search of the new generation serves the rewritten document at its
	// new version.
	store, err := vectorstore.OpenGeneration(ctx, b.db.Pool, gen, laterDims)
	if err != nil {
		t.Fatal(err)
	}
	client, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: laterModel, Dims: laterDims})
	if err != nil {
		t.Fatal(err)
	}
	q, err := client.Embed(ctx, []string{"before document 3, rewritten while the new generation was building"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := store.Search(ctx, b.db.Pool, q[0], vectorstore.SearchOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Text != "before document 3, rewritten while the new generation was building" || hits[0].Version != 2 {
		t.Errorf("search of generation %d: %+v, want the rewritten document at version 2", gen, hits)
	}
}
