package batchapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

const (
	testModel = "text-embedding-3-small"
	testDims  = 8
)

// request is one request of a test file.
type request struct {
	id     string
	inputs []string
}

type testBundle struct {
	ctx    context.Context
	sim    *embedsim.Server
	clock  *clocktest.Clock
	client *batchapi.Client
}

// setup starts embed-sim on a hand-moved clock, and a client for it.
func setup(t *testing.T, cfg embedsim.Config) *testBundle {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	cfg.Dims = testDims
	sim := embedsim.StartTest(t, cfg, embedsim.WithClock(clock.Now))
	client, err := batchapi.New(batchapi.Config{URL: sim.URL() + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{ctx: t.Context(), sim: sim, clock: clock, client: client}
}

// live is the live endpoint's client on the same server, to compare with.
func (tb *testBundle) live(t *testing.T) *embedder.OpenAI {
	t.Helper()
	c, err := embedder.NewOpenAI(embedder.Config{URL: tb.sim.URL(), Model: testModel, Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// build writes a request file of reqs with the builder.
func build(t *testing.T, reqs []request) []byte {
	t.Helper()
	var buf bytes.Buffer
	b, err := batchapi.NewBuilder(&buf, batchapi.BuilderConfig{Model: testModel, Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := b.Add(r.id, r.inputs); err != nil {
			t.Fatalf("add %s: %v", r.id, err)
		}
	}
	return buf.Bytes()
}

// submit uploads a file and creates a batch over it.
func (tb *testBundle) submit(t *testing.T, file []byte) *batchapi.Batch {
	t.Helper()
	f, err := tb.client.UploadFile(tb.ctx, "requests.jsonl", bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tb.client.CreateBatch(tb.ctx, batchapi.CreateParams{InputFileID: f.ID, Metadata: map[string]string{"run": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != batchapi.StatusValidating {
		t.Fatalf("new batch is %s, want validating", b.Status)
	}
	return b
}

// get returns a batch after moving the clock by d.
func (tb *testBundle) get(t *testing.T, id string, d time.Duration) *batchapi.Batch {
	t.Helper()
	tb.clock.Advance(d)
	b, err := tb.client.Batch(tb.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// results reads a file's results, failing the test on any line that is
// not one.
func (tb *testBundle) results(t *testing.T, fileID string) []batchapi.Result {
	t.Helper()
	if fileID == "" {
		return nil
	}
	rc, err := tb.client.FileContent(tb.ctx, fileID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	r := batchapi.NewReader(rc, batchapi.ReaderConfig{Dims: testDims})
	var out []batchapi.Result
	for {
		res, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
}

// byID indexes results by custom_id, failing on a duplicate.
func byID(t *testing.T, rs ...[]batchapi.Result) map[string]batchapi.Result {
	t.Helper()
	m := make(map[string]batchapi.Result)
	for _, list := range rs {
		for _, r := range list {
			if _, dup := m[r.CustomID]; dup {
				t.Fatalf("custom_id %s answered twice", r.CustomID)
			}
			m[r.CustomID] = r
		}
	}
	return m
}

func customIDs(rs []batchapi.Result) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.CustomID
	}
	return ids
}
