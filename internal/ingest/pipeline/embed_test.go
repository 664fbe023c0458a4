package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/classify"
)

// blamingEmbedder rejects any request holding an input with "BAD" in it,
// naming the lowest such input as OpenAI's 400 does, and counts what it
// was sent.
type blamingEmbedder struct {
	mu             sync.Mutex
	requests, sent int
}

func (e *blamingEmbedder) Embed(_ context.Context, inputs []string) ([][]float32, error) {
	e.mu.Lock()
	e.requests++
	e.sent += len(inputs)
	e.mu.Unlock()
	for i, in := range inputs {
		if strings.Contains(in, "BAD") {
			return nil, &embedder.InputError{Index: i, Err: classify.Permanentf(classify.ClassBadRequest, "'$.input[%d]' is invalid", i)}
		}
	}
	vecs := make([][]float32, len(inputs))
	for i := range vecs {
		vecs[i] = []float32{1}
	}
	return vecs, nil
}

func (e *blamingEmbedder) Model() string { return "blaming" }
func (e *blamingEmbedder) Dims() int     { return 1 }

func (e *blamingEmbedder) counts() (requests, sent int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests, e.sent
}

// embedPipeline is a pipeline with just what the embed stage uses.
func embedPipeline(emb Embedder) *Pipeline {
	p := &Pipeline{emb: emb, metrics: NewMetrics(nil), now: time.Now, crash: func(string) {}, tokens: tokens.Approximate{}}
	p.cfg.applyDefaults()
	p.bindGeneration(1)
	return p
}

// batch returns n jobs, each bad with probability rate.
func batch(rng *rand.Rand, n int, rate float64) (jobs []*Job, bad int) {
	for i := range n {
		j := &Job{Delivered: 1}
		j.chunk.DocID, j.chunk.Text = fmt.Sprintf("doc-%d", i), fmt.Sprintf("chunk %d", i)
		if rng.Float64() < rate {
			j.chunk.Text += " BAD"
			bad++
		}
		jobs = append(jobs, j)
	}
	return jobs, bad
}

// Every input gets its certain outcome whatever the request sizes: the bad
// ones parked, each after exactly one rejection, the rest embedded.
func checkOutcomes(t *testing.T, jobs []*Job) {
	t.Helper()
	for _, j := range jobs {
		bad := strings.Contains(j.chunk.Text, "BAD")
		switch {
		case bad && (j.Outcome != Parked || j.Failure == nil || j.Failure.Decision.Class != classify.ClassBadRequest):
			t.Fatalf("%s: outcome %v, failure %+v; want parked as bad_request", j.chunk.Text, j.Outcome, j.Failure)
		case !bad && (j.vector == nil || j.Outcome != Undecided):
			t.Fatalf("%s: outcome %v, vector %v; want embedded", j.chunk.Text, j.Outcome, j.vector)
		}
	}
}

// With 5% of inputs rejected, requests shrink to the rejection rate, so
// a chunk costs well under two inputs sent; sending every survivor again
// after each rejection cost about 3.2. Clean batches before and after go
// out whole, one request each.
func TestEmbedSizesRequestsToTheRejectionRate(t *testing.T) {
	t.Parallel()
	emb := &blamingEmbedder{}
	p := embedPipeline(emb)
	rng := rand.New(rand.NewPCG(1, 2))

	clean, _ := batch(rng, 64, 0)
	p.embed(t.Context(), clean)
	checkOutcomes(t, clean)
	if req, sent := emb.counts(); req != 1 || sent != 64 {
		t.Fatalf("clean batch: %d requests, %d inputs sent; want 1 and 64", req, sent)
	}

	const batches = 200
	var chunks, bad int
	for range batches {
		jobs, b := batch(rng, 64, 0.05)
		p.embed(t.Context(), jobs)
		checkOutcomes(t, jobs)
		chunks, bad = chunks+len(jobs), bad+b
	}
	req, sent := emb.counts()
	req, sent = req-1, sent-64
	perChunk := float64(sent) / float64(chunks)
	t.Logf("%d batches of 64 with %d bad: %d requests (%.1f a batch), %.2f inputs sent a chunk, estimated rate %.3f",
		batches, bad, req, float64(req)/batches, perChunk, p.rejections.rate())
	if perChunk > 2 {
		t.Errorf("%.2f inputs sent a chunk, want at most 2", perChunk)
	}
	if r := p.rejections.rate(); r < 0.03 || r > 0.08 {
		t.Errorf("estimated rejection rate %.3f, want about 0.05", r)
	}

	// Once the corpus is clean again the estimate decays and batches go
	// out whole.
	for range 100 {
		jobs, _ := batch(rng, 64, 0)
		p.embed(t.Context(), jobs)
	}
	before, _ := emb.counts()
	jobs, _ := batch(rng, 64, 0)
	p.embed(t.Context(), jobs)
	if after, _ := emb.counts(); after-before != 1 {
		t.Errorf("clean batch after the poison passed: %d requests, want 1", after-before)
	}
}

// A batch that is all bad costs each input a handful of sends, not the
// 32 that resending every survivor after each rejection would.
func TestEmbedAllRejected(t *testing.T) {
	t.Parallel()
	emb := &blamingEmbedder{}
	p := embedPipeline(emb)
	rng := rand.New(rand.NewPCG(3, 4))
	var chunks int
	for range 20 {
		jobs, _ := batch(rng, 64, 1)
		p.embed(t.Context(), jobs)
		checkOutcomes(t, jobs)
		chunks += len(jobs)
	}
	_, sent := emb.counts()
	if perChunk := float64(sent) / float64(chunks); perChunk > 4 {
		t.Errorf("%.2f inputs sent a chunk, want at most 4", perChunk)
	}
}

func TestRequestSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		examined, rejected float64
		n, want            int
	}{
		{0, 0, 64, 64},      // no answer yet
		{1000, 5, 64, 64},   // 0.5%: 0.32 a request of 64
		{1000, 50, 64, 10},  // 5%
		{1000, 100, 64, 5},  // 10%
		{1000, 1000, 64, 4}, // all rejected: never under minRequestInputs
		{1000, 50, 3, 3},    // a small group stays whole
		{1000, 1000, 2, 2},  // even when everything is rejected
		{1000, 50, 12, 10},  // 0.6 expected: split
		{1000, 50, 10, 10},  // 0.5 expected: whole
	} {
		r := rejectionRate{examined: tc.examined, rejected: tc.rejected}
		if got := r.requestSize(tc.n); got != tc.want {
			t.Errorf("rate %g/%g, n %d: size %d, want %d", tc.rejected, tc.examined, tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct{ n, size, want int }{{64, 10, 7}, {64, 64, 1}, {5, 4, 2}, {1, 4, 1}} {
		ps := pieces(make([]*Job, tc.n), tc.size)
		total := 0
		for _, p := range ps {
			total += len(p)
			if len(p) > tc.size || len(p) == 0 {
				t.Errorf("pieces(%d, %d): a piece of %d", tc.n, tc.size, len(p))
			}
		}
		if len(ps) != tc.want || total != tc.n {
			t.Errorf("pieces(%d, %d): %d pieces of %d jobs, want %d of %d", tc.n, tc.size, len(ps), total, tc.want, tc.n)
		}
	}
}
