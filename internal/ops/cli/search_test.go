package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

const searchDims = 16

// searchDoc is a one-chunk document to index.
type searchDoc struct {
	source, nativeID, status, text string
}

// seedSearch indexes docs with vectors from the embedding simulator and
// returns the environment that points sluice at both.
func seedSearch(t *testing.T, docs ...searchDoc) map[string]string {
	t.Helper()
	env, _ := seedSearchSim(t, docs...)
	return env
}

// seedSearchSim is seedSearch, returning the simulator too.
func seedSearchSim(t *testing.T, docs ...searchDoc) (map[string]string, *embedsim.Server) {
	t.Helper()
	ctx := context.Background()
	sim := embedsim.StartTest(t, embedsim.Config{Dims: searchDims})
	db := testenv.NewDatabase(t, testenv.WithDims(searchDims))
	emb, err := embedder.NewOpenAI(embedder.Config{URL: sim.URL(), Model: sim.Model(), Dims: searchDims})
	if err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.Open(ctx, db.Pool, searchDims)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.text
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]vectorstore.Record, len(docs))
	for i, d := range docs {
		docID := messages.DocID(d.source, d.nativeID)
		_, err := db.Pool.Exec(ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, $2, $3, 1, 'h', 1, $4)`, docID, d.source, d.nativeID, d.status)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = vectorstore.Record{DocID: docID, ChunkIndex: 0, Version: 1, ContentHash: "h", Model: sim.Model(), Embedding: vecs[i], Text: d.text,
			Metadata: json.RawMessage(`{"title": "` + d.nativeID + `"}`)}
	}
	if _, err := store.Upsert(ctx, db.Pool, recs); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"DATABASE_URL": db.URL, "EMBEDDER_URL": sim.URL(), "EMBEDDING_DIMS": "16"}, sim
}

type searchOut struct {
	Hits []struct {
		Rank           int     `json:"rank"`
		Score          float64 `json:"score"`
		SourceID       string  `json:"source_id"`
		SourceNativeID string  `json:"source_native_id"`
		ChunkIndex     int     `json:"chunk_index"`
		Text           string  `json:"text"`
		Metadata       struct {
			Title string `json:"title"`
		} `json:"metadata"`
	} `json:"hits"`
}

func TestSearchFindsTheLexicallyNearestReadyChunk(t *testing.T) {
	t.Parallel()
	env := seedSearch(t,
		searchDoc{"wiki", "animals/fox.md", "ready", "the quick brown fox jumps over the lazy dog"},
		searchDoc{"wiki", "db/postgres.md", "ready", "postgres vacuum reclaims storage from dead tuples"},
		searchDoc{"news", "markets.html", "ready", "stock markets rallied after the central bank decision"},
		// Identical to the query, but not searchable until ready.
		searchDoc{"news", "draft.html", "processing", "quick brown fox jumps"},
	)

	var res searchOut
	sluiceDecode(t, env, &res, "search", "quick brown fox jumps", "--k", "2")
	if len(res.Hits) != 2 || res.Hits[0].SourceNativeID != "animals/fox.md" || res.Hits[0].Rank != 1 || res.Hits[1].Rank != 2 {
		t.Fatalf("hits %+v; want 2, the fox first", res.Hits)
	}
	if h := res.Hits[0]; h.SourceID != "wiki" || h.ChunkIndex != 0 || h.Score <= res.Hits[1].Score || h.Score > 1 {
		t.Errorf("top hit %+v; want wiki chunk 0 scoring above the second", h)
	}
	if h := res.Hits[0]; h.Metadata.Title != "animals/fox.md" {
		t.Errorf("top hit's metadata %+v; want the chunk's stored metadata, title animals/fox.md", h.Metadata)
	}

	sluiceDecode(t, env, &res, "search", "--source", "news", "quick brown fox jumps")
	if len(res.Hits) != 1 || res.Hits[0].SourceNativeID != "markets.html" {
		t.Errorf("--source news: %+v; want only the ready news document", res.Hits)
	}

	code, out, errOut := sluice(t, env, "search", "postgres", "vacuum")
	if code != 0 {
		t.Fatalf("search: exit %d, %s", code, errOut)
	}
	first := regexp.MustCompile(`(?m)^1\s+(\d\.\d{3})\s+wiki\s+db/postgres\.md\s+0\s+postgres vacuum reclaims`)
	if !first.MatchString(out) {
		t.Errorf("text output lacks rank 1 for the postgres chunk:\n%s", out)
	}
}

// A query answered 429 (with Retry-After), then 503, is retried as the
// pipeline's calls are: the search succeeds on the third answer.
func TestSearchWaitsOutAThrottledQuery(t *testing.T) {
	t.Parallel()
	env, sim := seedSearchSim(t, searchDoc{"wiki", "animals/fox.md", "ready", "the quick brown fox jumps over the lazy dog"})
	if err := sim.SetFaults(embedsim.Faults{RetryAfterSeconds: 1,
		Sequences: []embedsim.SequenceRule{{Match: "quick brown fox", Sequence: "429,503,200"}}}); err != nil {
		t.Fatal(err)
	}
	var res searchOut
	sluiceDecode(t, env, &res, "search", "quick brown fox")
	if len(res.Hits) != 1 || res.Hits[0].SourceNativeID != "animals/fox.md" {
		t.Fatalf("hits %+v; want the fox", res.Hits)
	}
	if n := sim.SeenCount("quick brown fox"); n != 3 {
		t.Errorf("the query was sent %d times, want 3 (429, 503, then its answer)", n)
	}
}

func TestSearchErrors(t *testing.T) {
	t.Parallel()
	env := seedSearch(t, searchDoc{"wiki", "a.md", "ready", "some text"})
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want string
	}{
		{"no text", []string{"search"}, 2, "needs the TEXT"},
		{"blank text", []string{"search", "  "}, 2, "needs the TEXT"},
		{"bad k", []string{"search", "--k", "0", "x"}, 2, "--k 0"},
		{"unknown generation", []string{"search", "--generation", "3", "x"}, 1, "unknown index generation 3"},
		{"negative generation", []string{"search", "--generation", "-1", "x"}, 2, "--generation -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sluice(t, env, tc.args...)
			if code != tc.exit || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d stdout %q stderr %q; want %d and %q", code, out, errOut, tc.exit, tc.want)
			}
		})
	}
}
