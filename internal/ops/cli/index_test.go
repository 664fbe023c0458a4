package cli_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/generation"
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
	ctx   context.Context
	db    *testenv.Database
	sim   *embedsim.Server
	env   map[string]string
	texts []string
	docs  []string
}

var indexTexts = []string{
	"the quick brown fox jumps over the lazy dog",
	"postgres vacuum reclaims storage from dead tuples",
	"stock markets rallied after the central bank decision",
}

func setupIndex(t *testing.T) *indexBundle {
	t.Helper()
	return setupIndexOf(t, indexTexts)
}

// setupIndexOf is setupIndex with a document of each of texts, whose
// first nine characters name it, on a database made with opts.
func setupIndexOf(t *testing.T, texts []string, opts ...testenv.DBOption) *indexBundle {
	t.Helper()
	b := &indexBundle{ctx: context.Background(), sim: embedsim.StartTest(t, embedsim.Config{Dims: searchDims}),
		db: testenv.NewDatabase(t, append(opts, testenv.WithDims(searchDims))...), texts: texts}
	for _, text := range texts {
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
	vecs, err := emb.Embed(b.ctx, b.texts)
	if err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.OpenGeneration(b.ctx, b.db.Pool, gen, dims)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]vectorstore.Record, len(b.docs))
	for i, id := range b.docs {
		recs[i] = vectorstore.Record{DocID: id, ChunkIndex: 0, Version: 1, ContentHash: "h", Model: model, Embedding: vecs[i], Text: prefix + b.texts[i]}
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
	code, out, errOut = sluice(t, b.env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "smaller model", "--execute")
	if code != 0 || !strings.Contains(out, "generation 2") {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = sluice(t, b.env, "index", "status", "2")
	if code != 0 || !strings.Contains(out, "0 of 3 chunks stored") || !strings.Contains(out, "3 owed") || !strings.Contains(out, "backfill: written by the backfill") {
		t.Errorf("status of the new generation:\n%s\nwant every chunk owed and the backfill named", out)
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
	if code, out, errOut = sluice(t, b.env, "index", "activate", "2", "--reason", "complete now", "--execute"); code != 0 ||
		strings.Contains(out, "forced") {
		t.Fatalf("activate a complete generation: exit %d, %q %q; want it done, unforced", code, out, errOut)
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
	code, _, errOut = sluice(t, b.env, "index", "drop", "1", "--reason", "oops", "--execute")
	if code != 1 || !strings.Contains(errOut, "generation 1 cannot be dropped") {
		t.Errorf("dropping generation 1, retired: exit %d, %q; want it refused, the pipeline writes it", code, errOut)
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
	if code, out, _ = sluice(t, b.env, "index", "status", "2"); code != 0 || !strings.Contains(out, "backfill: none: the generation was dropped") {
		t.Errorf("status of a dropped generation:\n%s\nwant it to say its vectors were removed", out)
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
	cfg, err := pgx.ParseConfig(b.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	rows, err := b.db.Pool.Query(b.ctx, `
		SELECT action || ' ' || coalesce(generation::text, '') || ' ' || dry_run::text || ' ' || requested_by
		       || CASE WHEN login = $1 THEN '' ELSE ' as ' || login END
		FROM index_generation_audit ORDER BY audit_id`, cfg.User)
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
		{"retry the first", []string{"index", "retry", "1", "--reason", "r"}, 1, "sluice dlq replay"},
		{"retry unknown", []string{"index", "retry", "9", "--reason", "r"}, 1, "unknown index generation 9"},
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

type reconcileGenOut struct {
	OK          bool `json:"ok"`
	Generations []struct {
		Generation         int    `json:"generation"`
		Status             string `json:"status"`
		Vectors            int    `json:"vectors"`
		DeletedWithVectors int    `json:"deleted_with_vectors"`
	} `json:"generations"`
	NotOneActive string `json:"not_one_active"`
	Active       *struct {
		Generation int `json:"generation"`
		Owed       int `json:"owed"`
		Parked     int `json:"parked"`
	} `json:"active"`
	ActiveOwes string `json:"active_owes"`
	Unerased   []struct {
		DocID string         `json:"doc_id"`
		Where map[string]int `json:"where"`
	} `json:"deleted_with_data"`
}

func (b *indexBundle) reconcile(t *testing.T, env map[string]string, args ...string) (int, reconcileGenOut) {
	t.Helper()
	code, out, errOut := sluice(t, env, append([]string{"reconcile", "--json"}, args...)...)
	var rep reconcileGenOut
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("reconcile %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
	}
	return code, rep
}

// reconcile reports every generation, finds a deleted document's vector
// in any of them (and --redrive erases it), and fails unless exactly one
// generation is active.
func TestReconcileChecksEveryGeneration(t *testing.T) {
	t.Parallel()
	b := setupIndex(t)
	n := testenv.NewNATS(t)
	if code, _, errOut := sluice(t, map[string]string{"NATS_URL": n.URL}, "nats", "setup"); code != 0 {
		t.Fatalf("nats setup exited %d: %s", code, errOut)
	}
	env := maps.Clone(b.env)
	env["NATS_URL"] = n.URLFor(natsauth.Operator)
	if code, out, errOut := sluice(t, env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "r", "--execute"); code != 0 {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	b.write(t, 2, secondDims, secondModel, "g2: ")
	code, rep := b.reconcile(t, env)
	if code != 0 || len(rep.Generations) != 2 || rep.Generations[0].Vectors != 3 || rep.Generations[1].Vectors != 3 || rep.Generations[1].Status != "building" {
		t.Fatalf("reconcile of a sound system: exit %d, %+v; want 0 and both generations with 3 vectors", code, rep)
	}

	if code, out, errOut := sluice(t, env, "docs", "delete", "--source", "wiki", "--id", indexTexts[0][:9], "--reason", "gone", "--execute"); code != 0 {
		t.Fatalf("delete: exit %d, %q %q", code, out, errOut)
	}
	// Behind the version guard, as if the delete had missed generation 2.
	gone := b.docs[0]
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE documents SET status = 'ready' WHERE doc_id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.OpenGeneration(b.ctx, b.db.Pool, 2, secondDims)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, secondDims)
	v[0] = 1
	if _, err := store.Upsert(b.ctx, b.db.Pool, []vectorstore.Record{{DocID: gone, Version: 9, ContentHash: "h", Model: secondModel, Embedding: v, Text: "back"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE documents SET status = 'deleted' WHERE doc_id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	code, rep = b.reconcile(t, env)
	if code != 1 || len(rep.Unerased) != 1 || rep.Unerased[0].Where["generation_embeddings.g2"] != 1 ||
		rep.Generations[0].DeletedWithVectors != 0 || rep.Generations[1].DeletedWithVectors != 1 {
		t.Fatalf("reconcile with a deleted document's vector in generation 2: exit %d, %+v; want 1, naming generation 2", code, rep)
	}
	if code, rep = b.reconcile(t, env, "--redrive"); code != 0 {
		t.Fatalf("reconcile --redrive: exit %d, %+v", code, rep)
	}
	if code, rep = b.reconcile(t, env); code != 0 || rep.Generations[1].Vectors != 2 {
		t.Fatalf("after --redrive: exit %d, %+v; want 0 and generation 2 without the deleted document", code, rep)
	}

	// A damaged registry: the owner disables the check and retires the
	// only active generation.
	if _, err := b.db.Pool.Exec(b.ctx, `ALTER TABLE index_generations DISABLE TRIGGER index_generations_one_active`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE index_generations SET status = 'retired' WHERE generation = 1`); err != nil {
		t.Fatal(err)
	}
	if code, rep = b.reconcile(t, env, "--redrive"); code != 1 || !strings.Contains(rep.NotOneActive, "0 index generations are active") {
		t.Errorf("reconcile --redrive with no active generation: exit %d, %+v; want 1 and the problem named", code, rep)
	}
	// Activating one repairs it.
	if code, out, errOut := sluice(t, env, "index", "activate", "1", "--reason", "repair", "--execute"); code != 0 {
		t.Fatalf("activating a generation in a registry with none active: exit %d, %q %q", code, out, errOut)
	}
	if code, rep = b.reconcile(t, env); code != 0 || rep.NotOneActive != "" {
		t.Errorf("reconcile after the repair: exit %d, %+v; want 0", code, rep)
	}
}

// reconcile measures the active generation: a later one that owes chunks
// (a document ingested after it was activated) is a problem, named with
// its count and fix; generation 1 active, converged, is none.
func TestReconcileReportsAnActiveGenerationThatOwes(t *testing.T) {
	t.Parallel()
	b := setupIndex(t)
	n := testenv.NewNATS(t)
	if code, _, errOut := sluice(t, map[string]string{"NATS_URL": n.URL}, "nats", "setup"); code != 0 {
		t.Fatalf("nats setup exited %d: %s", code, errOut)
	}
	env := maps.Clone(b.env)
	env["NATS_URL"] = n.URLFor(natsauth.Operator)
	code, rep := b.reconcile(t, env)
	if code != 0 || rep.Active == nil || rep.Active.Generation != 1 || rep.Active.Owed != 0 || rep.ActiveOwes != "" {
		t.Fatalf("reconcile with generation 1 active: exit %d, %+v; want 0 and nothing owed", code, rep)
	}
	if code, out, errOut := sluice(t, env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "r", "--execute"); code != 0 {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	b.write(t, 2, secondDims, secondModel, "g2: ")
	if code, out, errOut := sluice(t, env, "index", "activate", "2", "--reason", "r", "--force", "--execute"); code != 0 {
		t.Fatalf("activate: exit %d, %q %q", code, out, errOut)
	}
	if code, rep = b.reconcile(t, env); code != 0 || rep.Active == nil || rep.Active.Generation != 2 || rep.ActiveOwes != "" {
		t.Fatalf("reconcile with a complete generation 2 active: exit %d, %+v; want 0", code, rep)
	}

	// A document ingested after the activation: the pipeline stores it in
	// generation 1 only.
	text := "a fourth document arrives after the switch"
	id := messages.DocID("wiki", text[:9])
	if _, err := b.db.Pool.Exec(b.ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ($1, 'wiki', $2, 1, 'h', 1, 'ready')`, id, text[:9]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(b.ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status) VALUES ($1, 0, 1, 'h', 'stored')`, id); err != nil {
		t.Fatal(err)
	}
	b.docs, b.texts = append(b.docs, id), append(append([]string(nil), b.texts...), text)
	b.write(t, 1, searchDims, b.sim.Model(), "")
	code, rep = b.reconcile(t, env)
	if code != 1 || rep.Active == nil || rep.Active.Generation != 2 || rep.Active.Owed != 1 ||
		!strings.Contains(rep.ActiveOwes, "active generation 2 owes 1 chunks") || !strings.Contains(rep.ActiveOwes, "sluice index activate 1") {
		t.Fatalf("reconcile with generation 2 active and owing a chunk: exit %d, %+v; want 1, naming the generation, the count and the fix", code, rep)
	}
	if code, out, errOut := sluice(t, env, "index", "activate", "1", "--reason", "roll back", "--execute"); code != 0 {
		t.Fatalf("roll back: exit %d, %q %q", code, out, errOut)
	}
	if code, rep = b.reconcile(t, env); code != 0 || rep.Active == nil || rep.Active.Generation != 1 || rep.ActiveOwes != "" {
		t.Errorf("reconcile after the rollback: exit %d, %+v; want 0", code, rep)
	}
}

// A search is of one snapshot: once it has read which generation is
// active, a rollback and a drop of that generation committed while the
// query is being embedded change nothing of its hits.
func TestSearchIsOfOneSnapshot(t *testing.T) {
	t.Parallel()
	b := setupIndex(t)
	if code, out, errOut := sluice(t, b.env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "r", "--execute"); code != 0 {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	b.write(t, 2, secondDims, secondModel, "g2: ")
	if code, out, errOut := sluice(t, b.env, "index", "activate", "2", "--reason", "r", "--force", "--execute"); code != 0 {
		t.Fatalf("activate: exit %d, %q %q", code, out, errOut)
	}
	// The embedder rolls back to generation 1 and drops generation 2
	// before it answers the query.
	target, err := url.Parse(b.sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var once sync.Once
	embedder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			reg := generation.New(b.db.Pool)
			req := generation.Request{By: "test", Reason: "meanwhile", Execute: true}
			if _, err := reg.Activate(r.Context(), 1, req); err != nil {
				t.Errorf("activate 1 meanwhile: %v", err)
			}
			if _, err := reg.Drop(r.Context(), 2, req); err != nil {
				t.Errorf("drop 2 meanwhile: %v", err)
			}
		})
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(embedder.Close)
	env := maps.Clone(b.env)
	env["EMBEDDER_URL"] = embedder.URL
	var res searchGenOut
	sluiceDecode(t, env, &res, "search", "--k", "3", "quick brown fox")
	if res.Generation != 2 || len(res.Hits) != 3 {
		t.Fatalf("search begun on generation 2 returned generation %d with %d hits, want all 3 of generation 2", res.Generation, len(res.Hits))
	}
	if res := b.search(t); res.Generation != 1 {
		t.Errorf("the next search served generation %d, want 1", res.Generation)
	}
}
