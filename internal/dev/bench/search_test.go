package bench

import (
	"bytes"
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Quantiles interpolate between neighbours as PostgreSQL's
// percentile_cont does, so that the search latencies read like the
// pipeline's.
func TestQuantile(t *testing.T) {
	t.Parallel()
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[99-i] = float64(i + 1)
	}
	for _, c := range []struct {
		in   []float64
		q    float64
		want float64
	}{
		{nil, 0.99, 0},
		{[]float64{7}, 0.99, 7},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{hundred, 0.5, 50.5},
		{hundred, 0.99, 99.01},
		{hundred, 1, 100},
		{hundred, 0, 1},
	} {
		if got := quantile(c.in, c.q); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("quantile(%d values, %v) = %v, want %v", len(c.in), c.q, got, c.want)
		}
	}
}

// pgvector's binary input is the dimension, a zero, then big-endian
// float4s.
func TestVectorBinary(t *testing.T) {
	t.Parallel()
	got := vectorBinary([]byte{0xff}, []float32{1, -0.5})
	want := []byte{0xff, 0, 2, 0, 0, 0x3f, 0x80, 0, 0, 0xbf, 0, 0, 0}
	if !bytes.Equal(got, want) {
		t.Errorf("vectorBinary = % x, want % x", got, want)
	}
}

// The vector search runs at its own sizes when selected, 100k and 1M by
// default and small in quick mode.
func TestSearchSizes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		only  []string
		quick bool
		sizes []int
		want  []int
	}{
		{[]string{ScenarioPipeline384}, false, nil, nil},
		{[]string{ScenarioScale}, false, nil, nil},
		{[]string{ScenarioSearch}, false, nil, []int{100_000, 1_000_000}},
		{[]string{ScenarioSearch}, true, nil, []int{2_000}},
		{[]string{ScenarioSearch}, false, []int{5_000}, []int{5_000}},
	} {
		cfg := Config{Only: c.only, Quick: c.quick, SearchSizes: c.sizes}
		cfg.applyDefaults()
		got := cfg.searchSizes()
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: searchSizes = %v, want %v", c.only, got, c.want)
		}
	}
}

// The recall sweep measures the index against the truth: the exact scan
// finds what a scan in Go finds, the index searches really go through
// the index (at pgvector's smallest useful ef_search they miss some of
// the exact top 10 of uniform vectors), and at its largest, over a set
// only twice that size, they find all of it.
func TestRecallIsMeasuredAgainstTheTruth(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a vector index on PostgreSQL with pgvector")
	}
	ctx := context.Background()
	const rows, queries = 2 * pgvectorMaxEfSearch, 20
	db, err := createDB(ctx, testenv.NewPgvector(t).URL, searchDims)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.drop() })
	store, err := vectorstore.Open(ctx, db.pool, searchDims)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	src := newVectorSource(distUniform, 0, rng)
	var stored [][]float32
	if err := loadVectors(ctx, db, rows, func() []float32 { v := src.draw(rng); stored = append(stored, v); return v }); err != nil {
		t.Fatal(err)
	}
	if _, err := buildIndex(ctx, db, store); err != nil {
		t.Fatal(err)
	}
	qs := make([][]float32, queries)
	truth := make([][]string, queries)
	for i := range qs {
		qs[i] = src.draw(rng)
		truth[i] = bruteTop10(stored, qs[i])
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	exact, err := exactTop(ctx, conn, store, qs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range exact {
		if !slices.Equal(exact[i], truth[i]) {
			t.Fatalf("query %d: the exact scan found %v, a scan in Go %v", i, exact[i], truth[i])
		}
	}
	// The first searchWarmup go untimed, and every query counts towards
	// recall.
	all := slices.Concat(qs[:searchWarmup], qs)
	for _, c := range []struct {
		ef       int
		min, max float64
	}{{10, 0, 0.9}, {pgvectorMaxEfSearch, 1, 1}} {
		got, err := searchAtEf(ctx, conn, store, c.ef, all, exact)
		if err != nil {
			t.Fatal(err)
		}
		if got.Recall < c.min || got.Recall > c.max {
			t.Errorf("recall@10 at ef_search %d over %d uniform rows: %.3f, want %.2f to %.2f", c.ef, rows, got.Recall, c.min, c.max)
		}
	}
}

// bruteTop10 is the keys of the 10 vectors of stored nearest to q by
// cosine distance, in float64, as loadVectors keyed them.
func bruteTop10(stored [][]float32, q []float32) []string {
	type hit struct {
		dist float64
		i    int
	}
	hits := make([]hit, len(stored))
	for i, v := range stored {
		var dot, nv, nq float64
		for k := range v {
			dot += float64(v[k]) * float64(q[k])
			nv += float64(v[k]) * float64(v[k])
			nq += float64(q[k]) * float64(q[k])
		}
		hits[i] = hit{1 - dot/math.Sqrt(nv*nq), i}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.i, b.i)) })
	keys := make([]string, 10)
	for i, h := range hits[:10] {
		keys[i] = docID(h.i) + "/0"
	}
	return keys
}

// Past efSearchesAlways the sweep goes on only while no ef_search has
// reached the recall target.
func TestMoreEfSearch(t *testing.T) {
	t.Parallel()
	low := []EfSearchResult{{EfSearch: 320, Recall: 0.5}}
	met := []EfSearchResult{{EfSearch: 80, Recall: 0.96}, {EfSearch: 320, Recall: 0.99}}
	for _, c := range []struct {
		ef    int
		sweep []EfSearchResult
		want  bool
	}{
		{10, nil, true}, {320, met, true}, {640, low, true}, {640, met, false}, {pgvectorMaxEfSearch, low, true},
	} {
		if got := moreEfSearch(c.ef, c.sweep); got != c.want {
			t.Errorf("moreEfSearch(%d, %v) = %v, want %v", c.ef, c.sweep, got, c.want)
		}
	}
}

// Clustered vectors are measured at every size, uniform ones at the
// smallest only.
func TestSearchDistributions(t *testing.T) {
	t.Parallel()
	sizes := []int{100_000, 1_000_000}
	if got := searchDistributions(100_000, sizes); !slices.Equal(got, []string{distUniform, distClustered, distTopics}) {
		t.Errorf("at 100,000: %v", got)
	}
	if got := searchDistributions(1_000_000, sizes); !slices.Equal(got, []string{distTopics}) {
		t.Errorf("at 1,000,000: %v", got)
	}
}

// Where no ef_search reached the recall target, the report says up to
// which one the sweep went.
func TestMinEf(t *testing.T) {
	t.Parallel()
	sweep := []EfSearchResult{{EfSearch: 10}, {EfSearch: pgvectorMaxEfSearch}}
	for _, c := range []struct {
		s    SearchResult
		want string
	}{
		{SearchResult{MinEfSearch: 80, Sweep: sweep}, "80"},
		{SearchResult{Sweep: sweep}, "none up to 1000"},
		{SearchResult{}, "none tried"},
	} {
		if got := minEf(c.s); got != c.want {
			t.Errorf("minEf(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// Topic vectors are unit vectors near their topic's centre, which differ
// from it mostly along the topic's own few directions: what is left once
// those are taken out is the small noise in every dimension. A larger
// corpus covers more topics.
func TestTopicVectorsVaryAlongTheirTopicsDirections(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	src := newVectorSource(distTopics, 5*topicRows, rng)
	if len(src.centres) != 5 || len(src.bases) != 5 || len(src.bases[0]) != topicRank {
		t.Fatalf("%d topics, %d bases of %d directions; want 5 of %d", len(src.centres), len(src.bases), len(src.bases[0]), topicRank)
	}
	if n := len(newVectorSource(distTopics, 10, rng).centres); n != 1 {
		t.Errorf("a corpus of 10 rows has %d topics, want 1", n)
	}
	dot := func(a, b []float32) (s float64) {
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	var inTopic, outside float64
	const draws = 200
	for range draws {
		v := src.draw(rng)
		if d := dot(v, v); math.Abs(d-1) > 1e-4 {
			t.Fatalf("a vector of norm² %v", d)
		}
		// The nearest centre is the vector's topic.
		best := 0
		for i, c := range src.centres {
			if dot(v, c) > dot(v, src.centres[best]) {
				best = i
			}
		}
		if cos := dot(v, src.centres[best]); cos < 0.7 || cos > 0.98 {
			t.Fatalf("cosine %v to its topic's centre", cos)
		}
		// The residual's share along the topic's directions (their span,
		// by least squares over the nearly orthogonal basis) against the
		// rest.
		r := slices.Clone(v)
		scale := float32(dot(v, src.centres[best]))
		for i := range r {
			r[i] -= scale * src.centres[best][i]
		}
		total := dot(r, r)
		var along float64
		for _, b := range src.bases[best] {
			p := dot(r, b)
			along += p * p
		}
		inTopic += along
		outside += total - along
	}
	if inTopic < 2*outside {
		t.Errorf("a topic's vectors vary %v along its directions and %v elsewhere, want mostly along them", inTopic/draws, outside/draws)
	}
}
