package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/embedder"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Generation 2's model and dimension, other than generation 1's.
const (
	secondModel = "embed-sim-small"
	secondDims  = 8
)

// indexBundle is a database whose generation 1 (searchDims) holds one
// chunk of each of three ready documents, stored in the manifest, and
// the environment that runs sluice as the operator role against it.
type indexBundle struct {
	ctx  context.Context
	db   *testenv.Database
	sim  *embedsim.Server
	env  map[string]string
	docs []string
}

var indexTexts = []string{
	"the quick brown fox jumps over the lazy dog",
	"postgres vacuum reclaims storage from dead tuples",
	"stock markets rallied after the central bank decision",
}

func setupIndex(t *testing.T) *indexBundle {
	t.Helper()
	b := &indexBundle{ctx: context.Background(), sim: embedsim.StartTest(t, embedsim.Config{Dims: searchDims}),
		db: testenv.NewDatabase(t, testenv.WithDims(searchDims))}
	for _, text := range indexTexts {
		id := messages.DocID("wiki", text[:9])
		b.docs = append(b.docs, id)
		if _, err := b.db.Pool.Exec(b.ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, 'wiki', $2, 1, 'h', 1, 'ready')`, id, text[:9]); err != nil {
			t.Fatal(err)
		}
		if _, err := b.db.Pool.Exec(b.ctx, `
			INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status) VALUES ($1, 0, 1, 'h', 'stored')`, id); err != nil {
			t.Fatal(err)
		}
	}
	b.write(t, 1, searchDims, b.sim.Model(), "")
	b.env = map[string]string{"DATABASE_URL": b.db.RoleURL(migrations.OperatorRole), "EMBEDDER_URL": b.sim.URL(), "USER": "alice"}
	return b
}

// write stores every document's chunk in generation gen, embedded by
// the simulator with model at dims, its text prefixed with prefix so
// that a hit tells which generation served it.
func (b *indexBundle) write(t *testing.T, gen, dims int, model, prefix string) {
	t.Helper()
	emb, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: model, Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.Embed(b.ctx, indexTexts)
	if err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.OpenGeneration(b.ctx, b.db.Pool, gen, dims)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]vectorstore.Record, len(b.docs))
	for i, id := range b.docs {
		recs[i] = vectorstore.Record{DocID: id, ChunkIndex: 0, Version: 1, ContentHash: "h", Model: model, Embedding: vecs[i], Text: prefix + indexTexts[i]}
	}
	if _, err := store.Upsert(b.ctx, b.db.Pool, recs); err != nil {
		t.Fatal(err)
	}
}

type searchGenOut struct {
	Generation int    `json:"generation"`
	Model      string `json:"model"`
	Hits       []struct {
		Text string `json:"text"`
	} `json:"hits"`
}

// search runs sluice search and checks that every hit is of the
// generation it says it searched: those of generation 2 carry "g2: ".
func (b *indexBundle) search(t *testing.T, args ...string) searchGenOut {
	t.Helper()
	var res searchGenOut
	sluiceDecode(t, b.env, &res, append([]string{"search", "--k", "3", "quick brown fox"}, args...)...)
	if len(res.Hits) != 3 {
		t.Fatalf("search %v: %d hits, want all 3 documents", args, len(res.Hits))
	}
	for _, h := range res.Hits {
		if strings.HasPrefix(h.Text, "g2: ") != (res.Generation == 2) {
			t.Fatalf("search %v of generation %d returned %q: a hit of another generation", args, res.Generation, h.Text)
		}
	}
	return res
}

// Activation switches what search serves, for every document at once,
// to the new generation's vectors and model; the previous generation
// stays whole, so activating it again rolls back; every change is
// audited, dry runs too.
func TestIndexActivateSwitchesSearchAndRollsBack(t *testing.T) {
	t.Parallel()
	b := setupIndex(t)
	if res := b.search(t); res.Generation != 1 {
		t.Fatalf("before any change search served generation %d, want 1", res.Generation)
	}

	code, out, errOut := sluice(t, b.env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "smaller model")
	if code != 0 || !strings.Contains(out, "DRY RUN") {
		t.Fatalf("create dry run: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = sluice(t, b.env, "index", "create", "--model", secondModel, "--dims", "8", "--chunk-size", "256", "--chunk-overlap", "32",
		"--reason", "smaller model", "--execute")
	if code != 0 || !strings.Contains(out, "generation 2") {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = sluice(t, b.env, "index", "status", "2")
	if code != 0 || !strings.Contains(out, "0 of 3 chunks stored") || !strings.Contains(out, "3 owed") || !strings.Contains(out, "backfill: not started") {
		t.Errorf("status of the new generation:\n%s\nwant every chunk owed and the backfill not started", out)
	}
	code, out, errOut = sluice(t, b.env, "index", "activate", "2", "--reason", "try it", "--execute")
	if code != 1 || !strings.Contains(errOut, "3 chunks owed") || !strings.Contains(errOut, "--force") || out != "" {
		t.Fatalf("activating an incomplete generation: exit %d, %q %q; want it refused, saying what is owed and how to force", code, out, errOut)
	}
	if res := b.search(t); res.Generation != 1 {
		t.Fatalf("after a refused activation search served generation %d", res.Generation)
	}

	b.write(t, 2, secondDims, secondModel, "g2: ")
	if code, out, errOut = sluice(t, b.env, "index", "activate", "2", "--reason", "complete now"); code != 0 || !strings.Contains(out, "DRY RUN") {
		t.Fatalf("activate dry run: exit %d, %q %q", code, out, errOut)
	}
	if res := b.search(t); res.Generation != 1 {
		t.Fatalf("a dry run changed what search serves: generation %d", res.Generation)
	}
	if code, out, errOut = sluice(t, b.env, "index", "activate", "2", "--reason", "complete now", "--execute"); code != 0 {
		t.Fatalf("activate: exit %d, %q %q", code, out, errOut)
	}
	res := b.search(t)
	if res.Generation != 2 || res.Model != secondModel {
		t.Fatalf("after activating 2 search served generation %d with model %q, want 2 with %s", res.Generation, res.Model, secondModel)
	}
	if res := b.search(t, "--generation", "1"); res.Generation != 1 {
		t.Errorf("--generation 1 searched generation %d", res.Generation)
	}
	code, _, errOut = sluice(t, b.env, "index", "drop", "2", "--reason", "oops", "--execute")
	if code != 1 || !strings.Contains(errOut, "activate another first") {
		t.Errorf("dropping the active generation: exit %d, %q; want it refused", code, errOut)
	}

	if code, out, errOut = sluice(t, b.env, "index", "activate", "1", "--reason", "roll back", "--execute"); code != 0 {
		t.Fatalf("roll back: exit %d, %q %q", code, out, errOut)
	}
	if res := b.search(t); res.Generation != 1 {
		t.Fatalf("after rolling back search served generation %d", res.Generation)
	}
	if code, out, errOut = sluice(t, b.env, "index", "drop", "2", "--reason", "not better", "--execute"); code != 0 || !strings.Contains(out, "3 vectors") {
		t.Fatalf("drop: exit %d, %q %q", code, out, errOut)
	}
	var gens []struct {
		Generation int    `json:"generation"`
		Status     string `json:"status"`
	}
	sluiceDecode(t, b.env, &gens, "index", "ls")
	if len(gens) != 2 || gens[0].Status != "active" || gens[1].Status != "dropped" {
		t.Errorf("index ls = %+v, want 1 active and 2 dropped", gens)
	}
	var audit []string
	rows, err := b.db.Pool.Query(b.ctx, `
		SELECT action || ' ' || coalesce(generation::text, '') || ' ' || dry_run::text || ' ' || requested_by
		FROM index_generation_audit ORDER BY audit_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		audit = append(audit, s)
	}
	want := []string{"create 2 true cli:alice", "create 2 false cli:alice", "activate 2 true cli:alice", "activate 2 false cli:alice",
		"activate 1 false cli:alice", "drop 2 false cli:alice"}
	if strings.Join(audit, "|") != strings.Join(want, "|") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(audit, "\n"), strings.Join(want, "\n"))
	}
}

// Bad input is refused with a message that says how to fix it, before
// anything is written.
func TestIndexCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setupIndex(t)
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want string
	}{
		{"no subcommand", []string{"index"}, 2, "needs a subcommand"},
		{"no model", []string{"index", "create", "--dims", "8", "--reason", "r"}, 2, "model is empty"},
		{"dims too large", []string{"index", "create", "--model", "m", "--dims", "16001", "--reason", "r"}, 2, "dims 16001 out of range"},
		{"no dims", []string{"index", "create", "--model", "m", "--reason", "r"}, 2, "dims 0 out of range"},
		{"overlap too large", []string{"index", "create", "--model", "m", "--dims", "8", "--chunk-size", "10", "--chunk-overlap", "10", "--reason", "r"}, 2, "overlap 10"},
		{"no reason", []string{"index", "create", "--model", "m", "--dims", "8"}, 2, "--reason"},
		{"unknown generation", []string{"index", "activate", "9", "--reason", "r"}, 1, "unknown index generation 9"},
		{"not a number", []string{"index", "status", "two"}, 2, "not a generation number"},
		{"unknown status", []string{"index", "status", "9"}, 1, "unknown index generation 9"},
		{"already active", []string{"index", "activate", "1", "--reason", "r"}, 1, "already active"},
		{"drop the first", []string{"index", "drop", "1", "--reason", "r"}, 1, "active"},
		{"search unknown", []string{"search", "--generation", "9", "x"}, 1, "unknown index generation 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sluice(t, b.env, tc.args...)
			if code != tc.exit || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d stdout %q stderr %q; want %d and %q", code, out, errOut, tc.exit, tc.want)
			}
		})
	}
	var n int
	if err := b.db.Pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM index_generation_audit) + (SELECT count(*) FROM index_generations) - 1`).Scan(&n); err != nil || n != 0 {
		t.Errorf("bad input wrote %d rows (%v), want none", n, err)
	}
}
