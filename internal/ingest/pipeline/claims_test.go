package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// heldEmbedder signals entered when its first call begins and holds that
// call until release is closed; then it answers through Embedder, or
// fails with err when set.
type heldEmbedder struct {
	pipeline.Embedder
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	err     error
}

func newHeldEmbedder(inner pipeline.Embedder, err error) *heldEmbedder {
	return &heldEmbedder{Embedder: inner, entered: make(chan struct{}), release: make(chan struct{}), err: err}
}

func (h *heldEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	first := false
	h.once.Do(func() { first = true; close(h.entered) })
	if first {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if h.err != nil {
			return nil, h.err
		}
	}
	return h.Embedder.Embed(ctx, inputs)
}

// pollingStore tells, by closing polling, when its claim is asked a
// second time in one batch: its pipeline is waiting on another
// process's claims, polling for their vectors.
type pollingStore struct {
	*vectorstore.Postgres
	calls   atomic.Int32
	polling chan struct{}
}

func (s *pollingStore) ClaimTexts(ctx context.Context, db vectorstore.DB, owner, model string, hashes []vectorstore.TextHash, ttl time.Duration) (vectorstore.Claims, error) {
	if s.calls.Add(1) == 2 {
		close(s.polling)
	}
	return s.Postgres.ClaimTexts(ctx, db, owner, model, hashes, ttl)
}

// lookupGate holds its pipeline's first batch between its lookup of
// stored vectors and what follows: it closes looked, and answers once
// proceed is closed.
type lookupGate struct {
	*vectorstore.Postgres
	once            sync.Once
	looked, proceed chan struct{}
}

func (s *lookupGate) Reusable(ctx context.Context, db vectorstore.DB, model string, hashes []vectorstore.TextHash) (map[vectorstore.TextHash][]float32, error) {
	out, err := s.Postgres.Reusable(ctx, db, model, hashes)
	s.once.Do(func() {
		close(s.looked)
		<-s.proceed
	})
	return out, err
}

// otherProcess is a pipeline with claims of its own, as a consumer in
// another process has, sharing the database and nothing else.
func (b *processBundle) otherProcess(cfg pipeline.Config, emb pipeline.Embedder) *pipeline.Pipeline {
	b.t.Helper()
	return b.otherProcessOn(b.store, cfg, emb)
}

// otherProcessOn is otherProcess over store.
func (b *processBundle) otherProcessOn(store vectorstore.Store, cfg pipeline.Config, emb pipeline.Embedder) *pipeline.Pipeline {
	b.t.Helper()
	p, err := pipeline.New(cfg, pipeline.Deps{Pool: b.db.Pool, Store: store, Embedder: emb, Log: zerolog.Nop()})
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

// processWhileHeld runs one in first, through held, and once held's call
// has begun, two in a second process configured by cfg; once the second
// is waiting on the first's claims it calls check, releases held, and
// waits for both.
func (b *processBundle) processWhileHeld(first *pipeline.Pipeline, held *heldEmbedder, one, two []*pipeline.Job, cfg pipeline.Config, check func()) {
	b.t.Helper()
	watched := &pollingStore{Postgres: b.store.(*vectorstore.Postgres), polling: make(chan struct{})}
	second := b.otherProcessOn(watched, cfg, b.client())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.process(first, one)
	}()
	<-held.entered
	secondDone := make(chan struct{})
	go func() {
		defer close(secondDone)
		// A wait that nothing ends fails the second batch's jobs instead
		// of hanging the test.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := second.Process(ctx, two); err != nil {
			b.t.Errorf("process: %v", err)
		}
	}()
	select {
	case <-watched.polling:
		check()
	case <-time.After(time.Minute):
		b.t.Error("the second process never waited on the first's claims")
	}
	close(held.release)
	<-done
	<-secondDone
}

// wantOutcomes checks that every job of jobs ended with outcome want.
func (b *processBundle) wantOutcomes(where string, jobs []*pipeline.Job, want pipeline.Outcome) {
	b.t.Helper()
	for _, j := range jobs {
		if j.Outcome != want {
			b.t.Errorf("%s %s: outcome %v (failure %+v), want %v", j.Chunk().DocID, where, j.Outcome, j.Failure, want)
		}
	}
}

// wantNoClaims checks that no batch left a claim behind.
func (b *processBundle) wantNoClaims() {
	b.t.Helper()
	if n := b.count(`SELECT count(*) FROM text_claims`); n != 0 {
		b.t.Errorf("%d claims left after every batch ended, want none", n)
	}
}

// Two consumer processes given the same texts at once send each text
// once: the second finds the first's claims and waits for its stored
// vectors instead of paying for the texts again. Without the claims the
// provider is sent 80 inputs here.
func TestProcessesShareTextsTheyEmbedAtOnce(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 40
	one, two := b.twoBatchesOfTheSameTexts("claims", distinct)
	held := newHeldEmbedder(b.client(), nil)
	b.processWhileHeld(b.otherProcess(pipeline.Config{}, held), held, one, two, pipeline.Config{}, func() {
		// The second process is waiting, not sending, while the first's
		// call is held.
		if inputs := b.sim.Counts().Inputs; inputs != 0 {
			t.Errorf("the other process sent %d inputs while the texts were claimed, want 0", inputs)
		}
	})
	b.wantOutcomes("in either process", append(one, two...), pipeline.Stored)
	if inputs := b.sim.Counts().Inputs; inputs != distinct {
		t.Errorf("the provider was sent %d inputs for %d texts embedded by two processes at once, want %d", inputs, distinct, distinct)
	}
	b.checkVectors(2 * distinct)
	b.wantNoClaims()
}

// A batch that finds no stored vector for its texts, then claims them
// after another process stored and released them, reuses the vectors:
// its claim looks them up again in the same statement. Claiming after
// the lookup alone sends every text twice here.
func TestATextStoredBetweenLookupAndClaimIsReused(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 20
	one, two := b.twoBatchesOfTheSameTexts("window", distinct)
	gated := &lookupGate{Postgres: b.store.(*vectorstore.Postgres), looked: make(chan struct{}), proceed: make(chan struct{})}
	late := b.otherProcessOn(gated, pipeline.Config{}, b.client())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.process(late, two)
	}()
	<-gated.looked
	b.process(b.otherProcess(pipeline.Config{}, b.client()), one)
	b.wantNoClaims()
	close(gated.proceed)
	<-done
	b.wantOutcomes("in either process", append(one, two...), pipeline.Stored)
	if inputs := b.sim.Counts().Inputs; inputs != distinct {
		t.Errorf("the provider was sent %d inputs for %d texts, want %d: the late batch paid for texts stored before its claim", inputs, distinct, distinct)
	}
	b.checkVectors(2 * distinct)
	b.wantNoClaims()
}

// A process that could not embed its claimed texts releases them when
// its batch gives up, and the process waiting on them embeds them at
// once, long before the claims would have expired. No claim outlives
// its batch.
func TestAFailedClaimerHandsItsTextsOver(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 10
	one, two := b.twoBatchesOfTheSameTexts("released", distinct)
	held := newHeldEmbedder(b.client(), errors.New("connection reset by peer"))
	// Claims would expire after an hour: only the release can end the
	// wait within the test's time.
	cfg := pipeline.Config{ClaimTTL: time.Hour}
	b.processWhileHeld(b.otherProcess(cfg, held), held, one, two, cfg, func() {})
	b.wantOutcomes("in the failing process", one, pipeline.Retry)
	b.wantOutcomes("in the waiting process", two, pipeline.Stored)
	b.wantNoClaims()
}

// A claim whose process died is taken over once it is older than the
// time to live: the text is embedded by the process that waited, and its
// chunk stored.
func TestAClaimOfADeadProcessExpires(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 5
	one, _ := b.twoBatchesOfTheSameTexts("expired", distinct)
	hashes := make([]vectorstore.TextHash, distinct)
	for n := range distinct {
		hashes[n] = vectorstore.HashText(passage(n))
	}
	claimer := b.store.(vectorstore.Claimer)
	if found, err := claimer.ClaimTexts(t.Context(), b.db.Pool, "a process killed with -9", "", hashes, time.Hour); err != nil || len(found.Elsewhere) != 0 {
		t.Fatalf("claim: held elsewhere %v, %v", found.Elsewhere, err)
	}
	const ttl = 2 * time.Second
	p := b.otherProcess(pipeline.Config{ClaimTTL: ttl}, b.client())
	start := time.Now()
	b.process(p, one)
	if waited := time.Since(start); waited < ttl {
		t.Errorf("the batch took %s, less than the time to live of the claims it should have waited on (%s)", waited, ttl)
	}
	b.wantOutcomes("once the dead process's claim expired", one, pipeline.Stored)
	if inputs := b.sim.Counts().Inputs; inputs != distinct {
		t.Errorf("the provider was sent %d inputs, want %d", inputs, distinct)
	}
}

// A pipeline whose batches meet no repeated text stops claiming after a
// few batches, so that a corpus that does not repeat itself pays nothing
// for claims; a batch that meets a repeat claims again.
func TestClaimsOnlyWhileTextsRepeat(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const distinct = 12
	docs := map[string]string{}
	for n := range distinct {
		docs[fmt.Sprintf("u%03d.txt", n)] = passage(n)
	}
	docs["repeat.txt"] = passage(0)
	b.produce("quiet", docs)
	texts := byText(t, b.jobs(1))
	// Claims held by a process that will not release them, on the last
	// text and on the batch the repeat comes in, for an hour.
	claimer := b.store.(vectorstore.Claimer)
	held := []vectorstore.TextHash{vectorstore.HashText(passage(distinct - 1)), vectorstore.HashText(passage(0))}
	if _, err := claimer.ClaimTexts(t.Context(), b.db.Pool, "a process that keeps its claims", "", held, time.Hour); err != nil {
		t.Fatal(err)
	}
	p := b.otherProcess(pipeline.Config{ClaimTTL: time.Hour}, b.client())
	within := func(jobs []*pipeline.Job) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		if err := p.Process(ctx, jobs); err != nil {
			t.Fatal(err)
		}
	}
	// One batch a text, the one the other process claims last: by then
	// the pipeline has stopped claiming, and sends it at once.
	for n := 1; n < distinct; n++ {
		jobs := texts[passage(n)]
		within(jobs)
		b.wantOutcomes(fmt.Sprintf("in batch %d, of texts no batch repeated", n), jobs, pipeline.Stored)
	}
	if n := b.sim.SeenCount(passage(distinct - 1)); n != 1 {
		t.Errorf("the text claimed elsewhere was sent %d times, want once: the pipeline no longer claims", n)
	}
	// Passage 0's two chunks in one batch are twins: a repeat, so the
	// batch claims, and waits on the other process's claim of their text
	// instead of sending it.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_ = p.Process(ctx, texts[passage(0)])
	if n := b.sim.SeenCount(passage(0)); n != 0 {
		t.Errorf("a repeated text another process claims was sent %d times, want none: a repeat turns claims on", n)
	}
}

// A claim whose release failed (its connection reset as its batch
// ended) is deleted by the pipeline's sweep once it is past its time to
// live, though no batch comes after it; a claim within its time to live
// is left alone.
func TestAQuietPipelineSweepsExpiredClaims(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	claimer := b.store.(vectorstore.Claimer)
	const ttl = time.Second
	stale := []vectorstore.TextHash{vectorstore.HashText(passage(0)), vectorstore.HashText(passage(1))}
	if _, err := claimer.ClaimTexts(t.Context(), b.db.Pool, "a batch whose release failed", "", stale, ttl); err != nil {
		t.Fatal(err)
	}
	p := b.otherProcess(pipeline.Config{ClaimTTL: ttl, ClaimSweepEvery: 100 * time.Millisecond}, b.client())
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.SweepClaims(ctx)
	}()
	defer func() { stop(); <-done }()
	time.Sleep(ttl / 2)
	if n := b.count(`SELECT count(*) FROM text_claims`); n != len(stale) {
		t.Fatalf("%d claims within their time to live, want %d left alone", n, len(stale))
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.count(`SELECT count(*) FROM text_claims`) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("claims past their time to live still held %s later, with no batch run", 10*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
