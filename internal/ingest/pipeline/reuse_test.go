package pipeline_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// passage is the text of a one-chunk document, different for every n.
func passage(n int) string {
	return fmt.Sprintf("Passage %d of the reuse corpus: sluice embeds text number %d once and keeps its vector.", n, n)
}

// decoded returns the chunk a job carries.
func decoded(t *testing.T, j *pipeline.Job) messages.ChunkJob {
	t.Helper()
	c, err := messages.DecodeChunkJob(j.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// byText groups jobs by the text they carry, in the order given.
func byText(t *testing.T, jobs []*pipeline.Job) map[string][]*pipeline.Job {
	t.Helper()
	out := map[string][]*pipeline.Job{}
	for _, j := range jobs {
		text := decoded(t, j).Text
		out[text] = append(out[text], j)
	}
	return out
}

// checkVectors checks that every stored chunk holds the vector embed-sim
// gives its text, and that there are want of them.
func (b *processBundle) checkVectors(want int) {
	t := b.t
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT doc_id, chunk_index, text, embedding::real[] FROM chunk_embeddings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			doc, text string
			index     int
			got       []float32
		)
		if err := rows.Scan(&doc, &index, &text, &got); err != nil {
			t.Fatal(err)
		}
		n++
		exp := make([]float32, dims)
		embedsim.EmbedInto(exp, text)
		for i := range exp {
			if len(got) != dims || math.Abs(float64(got[i]-exp[i])) > 1e-6 {
				t.Errorf("chunk %s/%d holds %v, want the provider's vector of its text %v", doc, index, got, exp)
				break
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("%d vectors stored, want %d", n, want)
	}
}

// generationOne is the value of the named counter's series of
// generation 1 on reg.
func generationOne(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == name && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetName() == "generation" && m.GetLabel()[0].GetValue() == "1" {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{generation=\"1\"} is not registered", name)
	return 0
}

func (b *processBundle) pipelineMeasured(emb pipeline.Embedder, m *pipeline.Metrics) *pipeline.Pipeline {
	b.t.Helper()
	p, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Pool: b.db.Pool, Store: b.store, Embedder: emb, Log: zerolog.Nop(), Metrics: m})
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

// On a corpus where 30% of the chunks repeat a text — within a batch, and
// across batches in other documents — the provider is sent each text
// once: 70 inputs for 100 chunks (the target is at most 0.72 of them),
// and every chunk is stored with the vector the provider gives its text.
func TestRepeatedTextsAreEmbeddedOnce(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct, repeated = 70, 30
	docs := map[string]string{}
	for n := range distinct {
		docs[fmt.Sprintf("d%03d.txt", n)] = passage(n)
		if n < repeated {
			docs[fmt.Sprintf("r%03d.txt", n)] = passage(n)
		}
	}
	b.produce("reuse", docs)
	groups := byText(t, b.jobs(1))
	// Batch one holds texts 0-34 and, a second time, 0-14; batch two
	// texts 35-69 and, from other documents, 15-29, which batch one stored.
	var one, two []*pipeline.Job
	for n := range distinct {
		g := groups[passage(n)]
		if want := 1 + min(1, max(0, repeated-n)); len(g) != want {
			t.Fatalf("text %d is in %d jobs, want %d", n, len(g), want)
		}
		switch {
		case n < 15:
			one = append(one, g...)
		case n < repeated:
			one, two = append(one, g[0]), append(two, g[1])
		case n < distinct/2:
			one = append(one, g[0])
		default:
			two = append(two, g[0])
		}
	}
	if len(one) != 50 || len(two) != 50 {
		t.Fatalf("batches of %d and %d jobs, want 50 and 50", len(one), len(two))
	}
	reg := prometheus.NewRegistry()
	p := b.pipelineMeasured(b.client(), pipeline.NewMetrics(reg))
	b.process(p, one)
	b.process(p, two)

	for _, j := range append(one, two...) {
		if j.Outcome != pipeline.Stored {
			t.Errorf("%s: outcome %v (failure %+v), want stored", j.Chunk().DocID, j.Outcome, j.Failure)
		}
	}
	chunks := distinct + repeated
	inputs := b.sim.Counts().Inputs
	t.Logf("provider inputs %d for %d chunks: %.2f of them", inputs, chunks, float64(inputs)/float64(chunks))
	if float64(inputs) > 0.72*float64(chunks) || inputs != distinct {
		t.Errorf("the provider was sent %d inputs for %d chunks of %d texts, want %d (at most 0.72 of the chunks)", inputs, chunks, distinct, distinct)
	}
	var texts []string
	for n := range distinct {
		texts = append(texts, passage(n))
		if c := b.sim.SeenCount(passage(n)); c != 1 {
			t.Errorf("text %d sent %d times, want once", n, c)
		}
	}
	b.checkVectors(chunks)
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`); n != chunks {
		t.Errorf("%d chunks stored in the manifest, want %d", n, chunks)
	}
	// The provider counts the simulator model's tokens, exactly.
	simCounter, _ := tokens.ForModel(b.client().Model())
	for name, want := range map[string]float64{
		"sluice_embedding_reuse_total":           repeated,
		"sluice_embedding_provider_inputs_total": distinct,
		"sluice_embedding_provider_tokens_total": float64(tokens.Sum(simCounter, texts)),
	} {
		if got := generationOne(t, reg, name); got != want {
			t.Errorf("%s{generation=\"1\"} = %v, want %v", name, got, want)
		}
	}
}

// A chunk parked while the provider was down, replayed once another
// document stored its very text, is stored without a provider call.
func TestReplayOfAStoredTextCallsNoProvider(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	text := passage(1)
	b.produce("replay", map[string]string{"a.txt": text, "b.txt": text})
	var a, other *pipeline.Job
	for _, j := range b.jobs(pipeline.DefaultMaxDeliveries) {
		if strings.HasSuffix(decoded(t, j).SourceNativeID, "a.txt") {
			a = j
		} else {
			other = j
		}
	}
	if a == nil || other == nil {
		t.Fatal("the producer did not publish both documents")
	}
	b.sim.SetOutage(time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	b.process(b.pipeline(b.client()), []*pipeline.Job{a})
	if a.Outcome != pipeline.Parked || a.Failure.ParkedClass != "transient_exhausted" {
		t.Fatalf("during the outage: outcome %v, failure %+v; want parked transient_exhausted", a.Outcome, a.Failure)
	}
	b.sim.SetOutage(time.Time{}, time.Time{})
	b.process(b.pipeline(b.client()), []*pipeline.Job{other})
	if other.Outcome != pipeline.Stored {
		t.Fatalf("the other document: outcome %v (failure %+v), want stored", other.Outcome, other.Failure)
	}
	before := b.sim.Counts().Inputs

	c := decoded(t, a)
	c.ReplayGen, c.DeadLetterID = 1, messages.DeadLetterID(c.DocID, c.ChunkIndex)
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	replay := &pipeline.Job{Raw: raw, Replay: true, FinalAttempt: true, Delivered: 1}
	b.process(b.pipeline(b.client()), []*pipeline.Job{replay})
	if replay.Outcome != pipeline.Stored {
		t.Fatalf("replay: outcome %v (failure %+v), want stored", replay.Outcome, replay.Failure)
	}
	if after := b.sim.Counts().Inputs; after != before {
		t.Errorf("the replay sent %d inputs to the provider, want none", after-before)
	}
	b.checkVectors(2)
}

// A vector is reused only for the model that made it: a pipeline of
// another model at the same dimension pays for the text again, and the
// first model still reuses its own.
func TestAnotherModelDoesNotReuse(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	text := passage(2)
	clientOf := func(model string) *embedder.OpenAI {
		c, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: model, Dims: dims})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for i, step := range []struct {
		doc, model string
		sent       int
	}{{"a.txt", "embed-sim-1", 1}, {"b.txt", "embed-sim-2", 2}, {"c.txt", "embed-sim-1", 2}, {"d.txt", "embed-sim-2", 2}} {
		b.produce("models", map[string]string{step.doc: text})
		jobs := b.jobs(1)
		if len(jobs) != 1 {
			t.Fatalf("step %d: %d pending jobs, want 1", i, len(jobs))
		}
		b.process(b.pipeline(clientOf(step.model)), jobs)
		if jobs[0].Outcome != pipeline.Stored {
			t.Fatalf("step %d: outcome %v (failure %+v), want stored", i, jobs[0].Outcome, jobs[0].Failure)
		}
		if n := b.sim.SeenCount(text); n != step.sent {
			t.Errorf("after %s with %s the provider was sent the text %d times, want %d", step.doc, step.model, n, step.sent)
		}
		if n := b.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1 AND model = $2`, jobs[0].Chunk().DocID, step.model); n != 1 {
			t.Errorf("%s is not stored under %s", step.doc, step.model)
		}
	}
	b.checkVectors(4)
}

// A new version that moves a document's chunks (a paragraph inserted at
// the top) pays only for the new text: the moved chunks reuse their
// vectors, one from the row the new version is about to overwrite, the
// other from the served version kept aside once its row was overwritten.
func TestMovedChunksAreReused(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	para := func(word string) string { return strings.TrimSpace(strings.Repeat(word+" ", 50)) }
	p, q, r := para("alpha"), para("bravo"), para("charlie")
	b.produce("moves", map[string]string{"m.txt": p + "\n\n" + q})
	v1 := b.jobs(1)
	if len(v1) != 2 {
		t.Fatalf("version 1 has %d chunks, want 2", len(v1))
	}
	b.process(b.pipeline(b.client()), v1)
	sent := b.sim.Counts().Inputs

	b.produce("moves", map[string]string{"m.txt": r + "\n\n" + p + "\n\n" + q})
	v2 := b.jobs(1)
	if len(v2) != 3 {
		t.Fatalf("version 2 has %d chunks, want 3", len(v2))
	}
	for i, want := range []string{r, p, q} {
		if got := decoded(t, v2[i]).Text; got != want {
			t.Fatalf("version 2's chunk %d is %q, want %q", i, got, want)
		}
	}
	// The new text first: its store overwrites chunk 0 and keeps version
	// 1's row aside, so p is found only there.
	b.process(b.pipeline(b.client()), v2[:1])
	b.process(b.pipeline(b.client()), v2[1:])
	for _, j := range v2 {
		if j.Outcome != pipeline.Stored {
			t.Errorf("chunk %d: outcome %v (failure %+v), want stored", j.Chunk().ChunkIndex, j.Outcome, j.Failure)
		}
	}
	if n := b.sim.Counts().Inputs - sent; n != 1 || b.sim.SeenCount(r) != 1 || b.sim.SeenCount(p) != 1 || b.sim.SeenCount(q) != 1 {
		t.Errorf("version 2 sent %d inputs (p %d, q %d, r %d times in all), want r alone", n, b.sim.SeenCount(p), b.sim.SeenCount(q), b.sim.SeenCount(r))
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE status = 'ready' AND version = 2`); n != 1 {
		t.Error("version 2 is not ready")
	}
	b.checkVectors(3)
}

// A lookup the database cannot answer fails the batch as a database
// error, as a failed store does: Process returns it, no job is decided
// (the consumer holds the batch), none is parked even on its last
// delivery, and nothing is sent to the provider. Once the database
// answers, the batch is stored.
func TestFailedLookupHoldsTheBatch(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	b.produce("lookup", map[string]string{"a.txt": passage(3), "b.txt": passage(4)})
	ctx := context.Background()
	if _, err := b.db.Pool.Exec(ctx, `ALTER TABLE chunk_embeddings_previous RENAME COLUMN text_hash TO hidden`); err != nil {
		t.Fatal(err)
	}
	jobs := b.jobs(pipeline.DefaultMaxDeliveries)
	if err := b.pipeline(b.client()).Process(ctx, jobs); err == nil {
		t.Fatal("Process succeeded though the lookup failed")
	}
	for _, j := range jobs {
		if j.Outcome != pipeline.Undecided {
			t.Errorf("outcome %v (failure %+v), want undecided", j.Outcome, j.Failure)
		}
	}
	if n := b.sim.Counts().Inputs; n != 0 {
		t.Errorf("%d inputs sent to the provider, want none", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`) + b.count(`SELECT count(*) FROM ingest_manifest WHERE status <> 'pending'`); n != 0 {
		t.Errorf("%d dead letters or settled chunks, want none", n)
	}
	if _, err := b.db.Pool.Exec(ctx, `ALTER TABLE chunk_embeddings_previous RENAME COLUMN hidden TO text_hash`); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		j.Reset()
	}
	b.process(b.pipeline(b.client()), jobs)
	for _, j := range jobs {
		if j.Outcome != pipeline.Stored {
			t.Errorf("once the database answers: outcome %v (failure %+v), want stored", j.Outcome, j.Failure)
		}
	}
	b.checkVectors(2)
}

// Chunks of one batch that share a text the provider rejects share its
// answer: the text is sent once, alone in its request after the
// rejection, and each chunk is parked as the provider's answer says;
// the rest of the batch is stored.
func TestTwinsShareARejection(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const poison = "a passage the provider refuses"
	b.produce("twins", map[string]string{"a.txt": poison, "b.txt": poison, "c.txt": passage(5), "d.txt": passage(6)})
	if err := b.sim.SetFaults(embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "refuses", Kind: embedsim.PoisonInvalidInput}}}); err != nil {
		t.Fatal(err)
	}
	jobs := b.jobs(1)
	b.process(b.pipeline(b.client()), jobs)
	parked := 0
	for _, j := range jobs {
		switch {
		case j.Chunk().Text == poison && j.Outcome == pipeline.Parked && j.Failure.Stage == pipeline.StageEmbed:
			parked++
		case j.Chunk().Text != poison && j.Outcome == pipeline.Stored:
		default:
			t.Errorf("%q: outcome %v (failure %+v)", j.Chunk().Text, j.Outcome, j.Failure)
		}
	}
	if parked != 2 {
		t.Errorf("%d chunks of the refused text parked, want 2", parked)
	}
	if n := b.sim.SeenCount(poison); n != 1 {
		t.Errorf("the refused text was sent %d times, want once", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE payload->>'stage' = 'embed'`); n != 2 {
		t.Errorf("%d dead letters, want one for each chunk of the refused text", n)
	}
	b.checkVectors(2)
}

// slowEmbedder answers after delay, so that batches overlap in flight.
type slowEmbedder struct {
	pipeline.Embedder
	delay time.Duration
}

func (s slowEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	time.Sleep(s.delay)
	return s.Embedder.Embed(ctx, inputs)
}

// twoBatchesOfTheSameTexts produces source's documents a000…, b000…,
// two documents of each of distinct texts, and returns their jobs as two
// batches that each hold every text once.
func (b *processBundle) twoBatchesOfTheSameTexts(source string, distinct int) (one, two []*pipeline.Job) {
	b.t.Helper()
	docs := map[string]string{}
	for n := range distinct {
		docs[fmt.Sprintf("a%03d.txt", n)] = passage(n)
		docs[fmt.Sprintf("b%03d.txt", n)] = passage(n)
	}
	b.produce(source, docs)
	for _, g := range byText(b.t, b.jobs(1)) {
		if len(g) != 2 {
			b.t.Fatalf("a text is in %d jobs, want 2", len(g))
		}
		one, two = append(one, g[0]), append(two, g[1])
	}
	return one, two
}

// Two batches in flight at once that share their texts send each text
// once: the one that claims a text embeds it, the other waits for that
// answer instead of paying for it again. Every chunk is stored with the
// provider's vector of its text.
func TestBatchesInFlightShareTheirTexts(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 40
	one, two := b.twoBatchesOfTheSameTexts("inflight", distinct)
	reg := prometheus.NewRegistry()
	p := b.pipelineMeasured(slowEmbedder{Embedder: b.client(), delay: time.Second}, pipeline.NewMetrics(reg))
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.process(p, one)
	}()
	b.process(p, two)
	<-done

	for _, j := range append(one, two...) {
		if j.Outcome != pipeline.Stored {
			t.Errorf("%s: outcome %v (failure %+v), want stored", j.Chunk().DocID, j.Outcome, j.Failure)
		}
	}
	if inputs := b.sim.Counts().Inputs; inputs != distinct {
		t.Errorf("the provider was sent %d inputs for %d texts in two batches in flight at once, want %d", inputs, distinct, distinct)
	}
	for n := range distinct {
		if c := b.sim.SeenCount(passage(n)); c != 1 {
			t.Errorf("text %d sent %d times, want once", n, c)
		}
	}
	b.checkVectors(2 * distinct)
	if got := generationOne(t, reg, "sluice_embedding_reuse_total"); got != distinct {
		t.Errorf("sluice_embedding_reuse_total = %v, want %d", got, distinct)
	}
}

// gatedStore holds the first Upsert until the second begins: a batch
// whose vectors are embedded but not committed while another batch runs.
type gatedStore struct {
	*vectorstore.Postgres
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Upsert(ctx context.Context, db vectorstore.DB, recs []vectorstore.Record) ([]vectorstore.Outcome, error) {
	switch g.calls.Add(1) {
	case 1:
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case 2:
		close(g.release)
	}
	return g.Postgres.Upsert(ctx, db, recs)
}

// A batch that needs a text another batch has just been answered for,
// but not yet committed, takes that answer: the store's lookup cannot
// see it yet, and the provider is not paid for the text again.
func TestAnAnswerIsSharedUntilItsCommit(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 40
	one, two := b.twoBatchesOfTheSameTexts("landed", distinct)
	gate := &gatedStore{Postgres: b.store.(*vectorstore.Postgres), entered: make(chan struct{}), release: make(chan struct{})}
	p, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Pool: b.db.Pool, Store: gate, Embedder: b.client(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.process(p, one)
	}()
	<-gate.entered
	b.process(p, two)
	<-done

	for _, j := range append(one, two...) {
		if j.Outcome != pipeline.Stored {
			t.Errorf("%s: outcome %v (failure %+v), want stored", j.Chunk().DocID, j.Outcome, j.Failure)
		}
	}
	if inputs := b.sim.Counts().Inputs; inputs != distinct {
		t.Errorf("the provider was sent %d inputs for %d texts, the second batch's while the first's answer awaited its commit; want %d",
			inputs, distinct, distinct)
	}
	b.checkVectors(2 * distinct)
}
