package producer_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

// cutRow is one chunk a recut generation's cut recorded.
type cutRow struct {
	Index    int
	Version  int64
	Withheld bool
	Text     string
	Hash     string
}

// A recut generation is cut by the sources' runs, as the producer's own
// role: every document a run reads, changed or not, once per version,
// with the generation's chunking; a chunk touching a secret is withheld
// with neither its text nor its hash; a new, shorter version replaces
// the whole cut; a generation cut like generation 1 is never cut; a
// delete erases the cut.
func TestARecutGenerationIsCutOnTheSourcesRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	dir, write := corpusWriter(t)
	long := strings.Repeat("rivers carry water through the gates of the valley. ", 12)
	write("a.txt", long)
	write("b.txt", "a short note about one gate")
	const secret = "AKIA" + "IOSFODNN7EXAMPLE"
	write("c.txt", strings.Repeat("harmless text about rivers. ", 6)+"key = "+secret+" "+strings.Repeat("more harmless text. ", 6))
	reg := generation.New(db.Pool)
	cutting := generation.Chunking{Size: 100, Overlap: 0, Unit: "chars"}
	own := generation.Chunking{Size: 400, Overlap: 0, Unit: "chars"}
	for _, s := range []generation.Spec{{Model: "m", Dims: 8, Chunking: cutting, Recut: true}, {Model: "m", Dims: 8, Chunking: own}} {
		if _, err := reg.Create(ctx, s, generation.Request{By: "cli:t", Reason: "test", Execute: true}); err != nil {
			t.Fatal(err)
		}
	}
	pool := db.RolePool(t, migrations.ProducerRole)
	run := func() {
		t.Helper()
		r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := producer.New(producer.Config{SourceID: "docs", Chunk: chunk.Config{Size: own.Size, Unit: chunk.UnitChars}}, pool, js, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	cut := func(name string) []cutRow {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `SELECT chunk_index, version, withheld, text, content_hash FROM generation_chunks
			WHERE generation = 2 AND doc_id = $1 ORDER BY chunk_index`, messages.DocID("docs", name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cutRow])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	wantCut := func(name, text string, version int64) {
		t.Helper()
		var want []string
		for _, c := range chunk.Split(text, chunk.Config{Size: cutting.Size, Unit: chunk.UnitChars}) {
			want = append(want, c.Text)
		}
		var got []string
		for _, c := range cut(name) {
			if c.Version != version {
				t.Errorf("%s chunk %d cut at version %d, want %d", name, c.Index, c.Version, version)
			}
			got = append(got, c.Text)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s cut into %q, want its 100-character chunks %q", name, got, want)
		}
	}
	queued := func() int {
		return countRows(t, db, `SELECT count(*) FROM generation_backfill_queue WHERE generation = 2`)
	}

	run()
	wantCut("a.txt", long, 1)
	wantCut("b.txt", "a short note about one gate", 1)
	var withheld int
	for _, c := range cut("c.txt") {
		if strings.Contains(c.Text, secret) {
			t.Errorf("c.txt chunk %d keeps the secret in its cut text", c.Index)
		}
		if c.Withheld {
			withheld++
			if c.Text != "" || c.Hash == "" {
				t.Errorf("c.txt chunk %d withheld with text %q, hash %q: want no text and the redaction's hash", c.Index, c.Text, c.Hash)
			}
		}
	}
	if withheld == 0 {
		t.Error("no chunk of c.txt withheld, though one holds a secret")
	}
	total := countRows(t, db, `SELECT count(*) FROM generation_chunks WHERE generation = 2`)
	if q := queued(); q != total-withheld {
		t.Errorf("%d chunks queued for generation 2, want its %d cut chunks not withheld", q, total-withheld)
	}
	if n := countRows(t, db, `SELECT count(*) FROM generation_documents WHERE generation <> 2`); n != 0 {
		t.Errorf("%d cuts recorded for a generation cut like generation 1, want none", n)
	}

	// A run that reads nothing new cuts nothing again.
	run()
	if q := queued(); q != total-withheld {
		t.Errorf("a run of unchanged documents queued %d more chunks, want none", q-(total-withheld))
	}

	// A shorter version replaces the whole cut.
	write("a.txt", "rivers carry water")
	run()
	wantCut("a.txt", "rivers carry water", 2)

	// A delete erases the cut with the rest of the document.
	b := messages.DocID("docs", "b.txt")
	if _, err := erase.New(db.Pool, nil).Delete(ctx, erase.Request{SourceID: "docs", DocIDs: []string{b}, By: "cli:t", Reason: "gone", Execute: true}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, `SELECT (SELECT count(*) FROM generation_chunks WHERE doc_id = $1) + (SELECT count(*) FROM generation_documents WHERE doc_id = $1)`, b); n != 0 {
		t.Errorf("a deleted document keeps %d rows of its cut", n)
	}
	if leaks, err := erase.Check(ctx, db.Pool); err != nil || len(leaks) != 0 {
		t.Errorf("erasure check: %v, %v", leaks, err)
	}
}

func countRows(t *testing.T, db *testenv.Database, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
