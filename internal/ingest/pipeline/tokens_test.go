package pipeline_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// tokenModel is a model whose tokenizer is known, so that the pipeline
// counts its tokens exactly.
const tokenModel = "text-embedding-3-small"

// pipelineWith is a pipeline with cfg embedding through the bundle's
// embed-sim as tokenModel.
func (b *processBundle) pipelineWith(cfg pipeline.Config) *pipeline.Pipeline {
	b.t.Helper()
	client, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: tokenModel, Dims: dims})
	if err != nil {
		b.t.Fatal(err)
	}
	p, err := pipeline.New(cfg, pipeline.Deps{Pool: b.db.Pool, Store: b.store, Embedder: client, Log: zerolog.Nop()})
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

// A chunk over the model's context length, by the model's own count, is
// parked as context_length_exceeded before any request carries it, and
// the chunks beside it are stored. The chunk is short in bytes but long
// in tokens, which an estimate of four bytes a token misses.
func TestOverContextChunkIsParkedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	counter, _ := tokens.ForModel(tokenModel)
	long := strings.Repeat("🎉", 40) // 120 tokens in 160 bytes
	b.produce("context", map[string]string{"a.txt": "a chunk that fits", "b.txt": long, "c.txt": "another one that fits"})
	jobs := b.jobs(1)
	b.process(b.pipelineWith(pipeline.Config{MaxInputTokens: 100}), jobs)
	for _, j := range jobs {
		switch {
		case j.Chunk().Text != long:
			if j.Outcome != pipeline.Stored {
				t.Errorf("%q: outcome %v (failure %+v), want stored", j.Chunk().Text, j.Outcome, j.Failure)
			}
		case j.Outcome != pipeline.Parked || j.Failure.ParkedClass != "context_length_exceeded" || j.Failure.Decision.Disposition != "quarantine":
			t.Errorf("the %d-token chunk: outcome %v, failure %+v; want parked as context_length_exceeded", counter.Count(long), j.Outcome, j.Failure)
		}
	}
	if b.sim.Seen(long) {
		t.Error("a request carried the chunk over the context length")
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked' AND last_error_class = 'context_length_exceeded' AND attempts = 1`); n != 1 {
		t.Errorf("%d manifest rows parked as context_length_exceeded after one attempt, want 1", n)
	}
}

// A batch whose inputs add up past the request token cap goes out as
// several requests, none past the cap by the model's count, and every
// chunk is stored.
func TestBatchPastTheTokenCapIsSplit(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	counter, _ := tokens.ForModel(tokenModel)
	docs := map[string]string{}
	total := 0
	for i := range 8 {
		text := fmt.Sprintf("文書%d：", i) + strings.Repeat("漢字と絵文字🎉", 6)
		docs[fmt.Sprintf("%d.txt", i)] = text
		total += counter.Count(text)
	}
	const limit = 150
	b.produce("capped", docs)
	jobs := b.jobs(1)
	before := len(b.sim.Requests())
	b.process(b.pipelineWith(pipeline.Config{EmbedMaxTokens: limit, MaxInputTokens: limit}), jobs)
	for _, j := range jobs {
		if j.Outcome != pipeline.Stored {
			t.Errorf("%q: outcome %v (failure %+v), want stored", j.Chunk().Text, j.Outcome, j.Failure)
		}
	}
	reqs := b.sim.Requests()[before:]
	if want := (total + limit - 1) / limit; len(reqs) < want {
		t.Errorf("%d requests for %d tokens at %d a request, want at least %d", len(reqs), total, limit, want)
	}
	for i, r := range reqs {
		if n := tokens.Sum(counter, r.Texts); n > limit {
			t.Errorf("request %d holds %d tokens, over the cap of %d", i, n, limit)
		}
	}
}
