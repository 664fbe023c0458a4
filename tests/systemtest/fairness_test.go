package systemtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// fairBound is the per-source bound of this test's INGEST: small, so that
// the test is quick, and well above one fetch.
const fairBound = 400

// No source starves another: a source with 50,000 chunks to ingest is
// already flowing when a second source publishes 100, and the second
// finishes while the first has most of its work still ahead. Without the
// per-source bound (INGEST_MAX_PER_SOURCE) the first source's whole
// backlog sits in the queue ahead of the second's, which then finishes
// only after it.
func TestSmallSourceIsNotStarvedByABacklog(t *testing.T) {
	t.Parallel()
	const bigChunks, smallChunks = 50_000, 100
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{}, pipeline.Config{})
	topo := s.topology()
	topo.IngestMaxPerSource = fairBound
	if err := broker.Ensure(context.Background(), s.js, topo); err != nil {
		t.Fatal(err)
	}

	ctx, stopBig := context.WithCancel(context.Background())
	bigDone := make(chan error, 1)
	go func() {
		_, err := s.produceJSONL(ctx, "big", bigChunks)
		bigDone <- err
	}()
	t.Cleanup(func() {
		stopBig()
		if err := <-bigDone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("big source's producer: %v", err)
		}
	})
	// The big source queues all it may before anything consumes: its
	// bound's worth, or with no bound its whole backlog.
	queued := bigChunks
	if fairBound > 0 {
		queued = fairBound
	}
	s.eventually(5*time.Minute, "the big source's backlog in INGEST", func() bool {
		return s.ingestMessages() >= queued
	})
	s.startAll(noBreaker)
	s.eventually(time.Minute, "the big source's first chunks stored", func() bool {
		return s.storedOf("big") >= fairBound
	})

	started := time.Now()
	if sum, err := s.produceJSONL(context.Background(), "small", smallChunks); err != nil || sum.Chunks != smallChunks {
		t.Fatalf("small source published %d of %d chunks: %v", sum.Chunks, smallChunks, err)
	}
	s.eventually(time.Minute, "the small source stored", func() bool {
		return s.storedOf("small") == smallChunks
	})
	bigStored := s.storedOf("big")
	t.Logf("the small source's %d chunks took %s; the big source had %d of %d stored then",
		smallChunks, time.Since(started).Round(time.Millisecond), bigStored, bigChunks)
	if bigStored > bigChunks/2 {
		t.Fatalf("the big source had %d of %d chunks stored when the small one finished: the small source waited behind its backlog",
			bigStored, bigChunks)
	}
}

// produceJSONL ingests n one-chunk documents of source from a JSONL file
// until ctx ends, as the producer binary would.
func (s *system) produceJSONL(ctx context.Context, source string, n int) (producer.Summary, error) {
	path := filepath.Join(s.t.TempDir(), source+".jsonl")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%s-%06d","text":"%s record %d about rivers, weirs and gates"}`+"\n", source, i, source, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return producer.Summary{}, err
	}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{path}})
	if err != nil {
		return producer.Summary{}, err
	}
	p, err := producer.New(producer.Config{SourceID: source, Chunk: chunk.Config{Size: 400, Unit: chunk.UnitChars},
		FullStreamWait: 50 * time.Millisecond}, s.db.Pool, s.connect(natsauth.Producer), zerolog.Nop())
	if err != nil {
		return producer.Summary{}, err
	}
	return p.Run(ctx, r)
}

// storedOf counts source's stored chunks.
func (s *system) storedOf(source string) int {
	return s.count(`SELECT count(*) FROM ingest_manifest m JOIN documents d USING (doc_id)
		WHERE d.source_id = $1 AND m.status = 'stored'`, source)
}

// ingestMessages is the number of jobs in INGEST.
func (s *system) ingestMessages() int {
	stream, err := s.js.Stream(context.Background(), broker.IngestStream)
	if err != nil {
		s.t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	return int(info.State.Msgs)
}
