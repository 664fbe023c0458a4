package cli_test

import (
	"cmp"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/messages"
)

// compareTexts is a corpus larger than the k compared, so that the top k
// of two embedding spaces can differ.
var compareTexts = []string{
	"the quick brown fox jumps over the lazy dog",
	"postgres vacuum reclaims storage from dead tuples",
	"stock markets rallied after the central bank decision",
	"a lazy cat sleeps in the warm afternoon sun",
	"vacuum full rewrites the whole table and locks it",
	"the central bank raised interest rates again",
	"foxes hunt mice in the snow at dawn",
	"index bloat slows postgres queries over time",
	"bond yields fell as markets priced in cuts",
	"dogs and cats can live together peacefully",
	"autovacuum tunes itself by table size thresholds",
	"quarterly earnings beat the analysts' forecasts",
}

var compareQueries = []string{
	"quick fox and lazy dog",
	"postgres vacuum",
	"central bank markets",
	"cats sleeping in the sun",
	"table locks and bloat",
}

type compareOut struct {
	A struct {
		Generation int    `json:"generation"`
		Model      string `json:"model"`
		Dims       int    `json:"dims"`
	} `json:"a"`
	B struct {
		Generation int    `json:"generation"`
		Model      string `json:"model"`
		Dims       int    `json:"dims"`
	} `json:"b"`
	K       int `json:"k"`
	Queries []struct {
		Query          string  `json:"query"`
		HitsA          int     `json:"hits_a"`
		HitsB          int     `json:"hits_b"`
		Shared         int     `json:"shared"`
		Overlap        float64 `json:"overlap"`
		ReciprocalRank float64 `json:"reciprocal_rank"`
	} `json:"queries"`
	Overall struct {
		Queries     int     `json:"queries"`
		MeanOverlap float64 `json:"mean_overlap"`
		MRR         float64 `json:"mrr"`
		NoOverlap   int     `json:"no_overlap"`
	} `json:"overall"`
}

// setupCompare is a pgvector database whose generation 1 holds
// compareTexts and whose generation 2 (model, or the simulator's for "",
// at dims) holds them too, and a queries file.
func setupCompare(t *testing.T, model string, dims int) (*indexBundle, string) {
	t.Helper()
	b := setupIndexOf(t, compareTexts, testenv.WithPgvector())
	model = cmp.Or(model, b.sim.Model())
	if code, out, errOut := sluice(t, b.env, "index", "create", "--model", model, "--dims", strconv.Itoa(dims), "--reason", "compare", "--execute"); code != 0 {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	b.write(t, 2, dims, model, "")
	file := filepath.Join(t.TempDir(), "queries.txt")
	// Blank lines are not queries.
	if err := os.WriteFile(file, []byte("\n"+strings.Join(compareQueries, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return b, file
}

// Two generations of one model and dimension rank every query alike:
// overlap@k and MRR are 1, and no query is without overlap.
func TestIndexCompareSameModelAgrees(t *testing.T) {
	t.Parallel()
	b, file := setupCompare(t, "", searchDims)
	var res compareOut
	sluiceDecode(t, b.env, &res, "index", "compare", "1", "2", "--queries", file, "--k", "3")
	if res.A.Generation != 1 || res.B.Generation != 2 || res.B.Dims != searchDims || res.K != 3 || len(res.Queries) != len(compareQueries) {
		t.Fatalf("compare = %+v; want generations 1 and 2, k 3 and every query", res)
	}
	for i, q := range res.Queries {
		if q.Query != compareQueries[i] || q.HitsA != 3 || q.HitsB != 3 || q.Shared != 3 || q.Overlap != 1 || q.ReciprocalRank != 1 {
			t.Errorf("query %d = %+v; want %q with 3 hits each, all shared, B's first A's first", i, q, compareQueries[i])
		}
	}
	if o := res.Overall; o.Queries != len(compareQueries) || o.MeanOverlap != 1 || o.MRR != 1 || o.NoOverlap != 0 {
		t.Errorf("overall = %+v; want overlap and MRR 1", o)
	}
	code, out, errOut := sluice(t, b.env, "index", "compare", "1", "2", "--queries", file, "--k", "3")
	if code != 0 || !strings.Contains(out, "mean overlap@3 1.000, MRR 1.000; 0 of 5 queries with no overlap") {
		t.Errorf("compare as a table: exit %d\n%s%s", code, out, errOut)
	}
}

// Generations of another dimension rank differently; the comparison's
// figures are those computed here from the simulator's vectors.
func TestIndexCompareMeasuresAnotherSpace(t *testing.T) {
	t.Parallel()
	const k = 3
	b, file := setupCompare(t, secondModel, secondDims)
	var res compareOut
	sluiceDecode(t, b.env, &res, "index", "compare", "1", "2", "--queries", file, "--k", strconv.Itoa(k))
	if res.B.Model != secondModel || res.B.Dims != secondDims || res.A.Dims != searchDims || len(res.Queries) != len(compareQueries) {
		t.Fatalf("compare = %+v; want generation 2 with %s at %d dims, every query", res, secondModel, secondDims)
	}
	var sumOverlap, sumRR float64
	var disjoint int
	for i, q := range compareQueries {
		a := topK(b, q, searchDims, k)
		bb := topK(b, q, secondDims, k)
		shared := 0
		for _, d := range bb {
			if slices.Contains(a, d) {
				shared++
			}
		}
		rr := 0.0
		if j := slices.Index(bb, a[0]); j >= 0 {
			rr = 1 / float64(j+1)
		}
		overlap := float64(shared) / k
		sumOverlap += overlap
		sumRR += rr
		if shared == 0 {
			disjoint++
		}
		got := res.Queries[i]
		if got.Shared != shared || math.Abs(got.Overlap-overlap) > 1e-9 || math.Abs(got.ReciprocalRank-rr) > 1e-9 {
			t.Errorf("query %q: %+v; want %d shared (overlap %.3f), RR %.3f (A %v, B %v)", q, got, shared, overlap, rr, a, bb)
		}
	}
	n := float64(len(compareQueries))
	if sumOverlap == n {
		t.Fatal("the two spaces agree on every query here: the test cannot tell a comparison from a copy")
	}
	o := res.Overall
	if math.Abs(o.MeanOverlap-sumOverlap/n) > 1e-9 || math.Abs(o.MRR-sumRR/n) > 1e-9 || o.NoOverlap != disjoint {
		t.Errorf("overall = %+v; want mean overlap %.3f, MRR %.3f, %d with no overlap", o, sumOverlap/n, sumRR/n, disjoint)
	}
}

// topK is the doc ids of the k texts nearest to query by cosine
// similarity of the simulator's vectors at dims, ties broken by doc_id
// as search breaks them.
func topK(b *indexBundle, query string, dims, k int) []string {
	type scored struct {
		id    string
		score float64
	}
	q := make([]float32, dims)
	embedsim.EmbedInto(q, query)
	all := make([]scored, len(b.texts))
	for i, text := range b.texts {
		v := make([]float32, dims)
		embedsim.EmbedInto(v, text)
		var dot, nq, nv float64
		for j := range v {
			dot += float64(q[j]) * float64(v[j])
			nq += float64(q[j]) * float64(q[j])
			nv += float64(v[j]) * float64(v[j])
		}
		all[i] = scored{messages.DocID("wiki", text[:9]), dot / math.Sqrt(nq*nv)}
	}
	slices.SortFunc(all, func(x, y scored) int {
		return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.id, y.id))
	})
	out := make([]string, k)
	for i := range out {
		out[i] = all[i].id
	}
	return out
}

// Bad input is refused, saying what is wrong, before any query is
// embedded.
func TestIndexCompareRefusesBadInput(t *testing.T) {
	t.Parallel()
	b, file := setupCompare(t, secondModel, secondDims)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("\n  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := sluice(t, b.env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "r", "--execute"); code != 0 {
		t.Fatalf("create 3: exit %d, %q %q", code, out, errOut)
	}
	if code, out, errOut := sluice(t, b.env, "index", "drop", "3", "--reason", "r", "--execute"); code != 0 {
		t.Fatalf("drop 3: exit %d, %q %q", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want string
	}{
		{"no queries", []string{"1", "2"}, 2, "needs --queries FILE"},
		{"missing file", []string{"1", "2", "--queries", filepath.Join(dir, "nope.txt")}, 2, "no such file"},
		{"empty file", []string{"1", "2", "--queries", empty}, 2, "holds no query"},
		{"one generation", []string{"1", "--queries", file}, 2, "two generation numbers"},
		{"not a number", []string{"1", "two", "--queries", file}, 2, "not a generation number"},
		{"k too large", []string{"1", "2", "--queries", file, "--k", "100000"}, 2, "--k 100000"},
		{"unknown generation", []string{"1", "9", "--queries", file}, 1, "unknown index generation 9"},
		{"dropped generation", []string{"3", "1", "--queries", file}, 1, "generation 3 was dropped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sluice(t, b.env, append([]string{"index", "compare"}, tc.args...)...)
			if code != tc.exit || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d stdout %q stderr %q; want %d and %q", code, out, errOut, tc.exit, tc.want)
			}
		})
	}
	for _, q := range compareQueries {
		if b.sim.SeenCount(q) != 0 {
			t.Errorf("query %q was embedded although the comparison was refused", q)
		}
	}
}
