package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// ScenarioSearch measures the vector index, search latency and recall@10
// through vectorstore.Search at Config.SearchSizes, over clustered unit
// vectors at every size and uniform random ones at the smallest, on
// PostgreSQL with pgvector.
const ScenarioSearch = "search"

// VectorSearch is the vector index, the search latency and its recall at
// the search sizes, on PostgreSQL with pgvector: the invocation's own
// PostgreSQL has no pgvector, so these are measured on the one in the
// pgvector root (localenv.PgvectorRoot).
type VectorSearch struct {
	// Skipped says why nothing was measured, such as a missing pgvector
	// root; empty when measured.
	Skipped string `json:"skipped,omitempty"`
	// Server names the PostgreSQL and pgvector versions.
	Server string `json:"server,omitempty"`
	// Results are one per size.
	Results []SearchResult `json:"results,omitempty"`
}

// SearchResult is the vector index and searches over one number of rows
// of one distribution.
type SearchResult struct {
	Rows int `json:"rows"`
	Dims int `json:"dims"`
	// Distribution is how the vectors were drawn: "uniform" (random unit
	// vectors, HNSW's worst case), "clustered" (a Gaussian mixture with
	// noise in every dimension) or "topics" (topics whose vectors vary
	// along a few directions, as text embeddings do); absent in reports
	// from before it was recorded, whose vectors were uniform.
	Distribution string `json:"distribution,omitempty"`
	// LoadSeconds is how long the COPY of the rows and their documents
	// took.
	LoadSeconds float64 `json:"load_seconds"`
	// IndexBuildSeconds is how long vectorstore's BuildIndex took: the
	// HNSW build and the ANALYZE after it.
	IndexBuildSeconds float64 `json:"index_build_seconds"`
	// IndexBytes is the size of the HNSW index.
	IndexBytes int64 `json:"index_bytes"`
	// Searches is how many searches P50Ms and P99Ms are taken over, each
	// for vectorstore.DefaultSearchK hits of a random query, one after
	// another on one connection.
	Searches int     `json:"searches"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	// Sweep is recall@10 against an exact scan, and latency, at each
	// ef_search tried; P50Ms and P99Ms are its entry at pgvector's
	// default ef_search. Absent in reports from before it was measured.
	Sweep []EfSearchResult `json:"sweep,omitempty"`
	// MinEfSearch is the smallest ef_search of Sweep whose recall@10 is
	// at least SearchRecallTarget; 0 when none reached it.
	MinEfSearch int `json:"min_ef_search,omitempty"`
}

// EfSearchResult is the searches at one hnsw.ef_search.
type EfSearchResult struct {
	EfSearch int `json:"ef_search"`
	// Recall is recall@10: the share of the exact top 10 the search
	// found, over searchRecallQueries queries.
	Recall float64 `json:"recall_at_10"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

const (
	// searchDims is the dimension of the searched vectors: the scale
	// runs'.
	searchDims = 384
	// searchCount is how many searches are timed, and searchWarmup how
	// many go first untimed: they prepare the statement and bring the
	// index's upper layers into memory.
	searchCount  = 200
	searchWarmup = 10
	// indexWorkMem is maintenance_work_mem for the index build, raised as
	// BuildIndex's doc advises for a large build: pgvector keeps each
	// vector and its links to 32 neighbours in memory while it builds,
	// about 2.3 KB a row at 384 dimensions, and 1,000,000 rows must fit.
	// With less, it builds on after a notice, much more slowly.
	indexWorkMem = "3GB"
	// searchRecallQueries is how many of the timed queries recall is
	// measured over: each needs an exact scan of every row.
	searchRecallQueries = 100
	// SearchRecallTarget is the recall@10 a search must reach.
	SearchRecallTarget = 0.95
	// searchP99TargetMs is the p99 a search over searchTargetRows topic
	// vectors must stay under at SearchRecallTarget.
	searchP99TargetMs = 25
	searchTargetRows  = 1_000_000
	// pgvectorDefaultEfSearch is hnsw.ef_search unless a session sets it.
	pgvectorDefaultEfSearch = 40
)

// efSearches are the hnsw.ef_search values tried, ascending. The sweep
// tries them all up to efSearchesAlways, and those beyond only while no
// value has reached SearchRecallTarget: uniform vectors need far more
// than clustered ones, and the report should say how much. The last is
// pgvector's maximum.
var efSearches = []int{10, 20, pgvectorDefaultEfSearch, 80, 160, 320, 640, pgvectorMaxEfSearch}

// efSearchesAlways is the largest ef_search the sweep always tries, and
// pgvectorMaxEfSearch the largest pgvector accepts.
const (
	efSearchesAlways    = 320
	pgvectorMaxEfSearch = 1000
)

// moreEfSearch reports whether the sweep goes on to ef_search ef after
// the results so far.
func moreEfSearch(ef int, sweep []EfSearchResult) bool {
	if ef <= efSearchesAlways {
		return true
	}
	for _, r := range sweep {
		if r.Recall >= SearchRecallTarget {
			return false
		}
	}
	return true
}

// Search distributions.
const (
	distUniform   = "uniform"
	distClustered = "clustered"
	distTopics    = "topics"
)

// Shape of the clustered vectors: a mixture of searchClusters Gaussians
// around random unit centres, each vector the normalised sum of its
// centre and noise of norm about searchSpread, so that a vector's cosine
// to its centre is about 0.9. The noise spreads over all 384 dimensions,
// which makes a cluster's inside as hard for a graph index as uniform
// vectors are.
const (
	searchClusters = 100
	searchSpread   = 0.5
)

// Shape of the topic vectors, the closest to real text embeddings: one
// topic per topicRows rows, as a larger corpus covers more subjects, and
// within a topic vectors that vary mostly along topicRank directions of
// its own (norm about topicSpread) plus a little noise in every
// dimension (norm about topicNoise). Text embeddings are known to have a
// low intrinsic dimension, tens rather than hundreds: the texts of one
// subject differ in a few ways, not in every direction at once.
const (
	topicRows   = 1_000
	topicRank   = 32
	topicSpread = 0.5
	topicNoise  = 0.25
)

// vectorSource draws the vectors of one distribution.
type vectorSource struct {
	name    string
	centres [][]float32
	// bases are each topic's directions of variation, by centre; nil but
	// for topics.
	bases [][][]float32
}

// newVectorSource returns the source of the named distribution over
// rows vectors.
func newVectorSource(name string, rows int, rng *rand.Rand) vectorSource {
	src := vectorSource{name: name}
	switch name {
	case distClustered:
		for range searchClusters {
			src.centres = append(src.centres, unitVector(rng, searchDims))
		}
	case distTopics:
		for range max(1, rows/topicRows) {
			src.centres = append(src.centres, unitVector(rng, searchDims))
			basis := make([][]float32, topicRank)
			for i := range basis {
				basis[i] = unitVector(rng, searchDims)
			}
			src.bases = append(src.bases, basis)
		}
	}
	return src
}

// draw returns the next unit vector.
func (s vectorSource) draw(rng *rand.Rand) []float32 {
	if len(s.centres) == 0 {
		return unitVector(rng, searchDims)
	}
	i := rng.IntN(len(s.centres))
	v := slices.Clone(s.centres[i])
	noise := searchSpread / math.Sqrt(searchDims)
	if s.bases != nil {
		noise = topicNoise / math.Sqrt(searchDims)
		for _, b := range s.bases[i] {
			w := float32(topicSpread / math.Sqrt(topicRank) * rng.NormFloat64())
			for j := range v {
				v[j] += w * b[j]
			}
		}
	}
	for j := range v {
		v[j] += float32(noise * rng.NormFloat64())
	}
	return normalize(v)
}

// errNoPgvectorRoot is what the report says when the pgvector root is
// missing.
var errNoPgvectorRoot = errors.New("no pgvector root (make pgvector-root)")

// searchSizes are the row counts to search over: Config.SearchSizes
// when the search scenario is selected.
func (c Config) searchSizes() []int {
	if !c.selected(ScenarioSearch) {
		return nil
	}
	return c.SearchSizes
}

// vectorSearch measures the vector index and search at each of the scale
// runs' sizes, on PostgreSQL with pgvector started once for all of them.
// Without a pgvector root, or where it cannot start, it reports why and
// measures nothing; that is no failure.
func (r *runner) vectorSearch(ctx context.Context) (*VectorSearch, []string) {
	sizes := r.cfg.searchSizes()
	if len(sizes) == 0 || ctx.Err() != nil {
		return nil, nil
	}
	vs := &VectorSearch{}
	pg, err := r.pgvector(ctx)
	if err != nil {
		vs.Skipped = err.Error()
		fmt.Fprintf(r.log, "vector search: skipped: %v\n", err)
		return vs, nil
	}
	var errs []string
	for _, n := range sizes {
		for _, dist := range searchDistributions(n, sizes) {
			res, server, err := searchAt(ctx, pg.URL, n, dist, r.cfg.Seed)
			if err != nil {
				errs = append(errs, fmt.Sprintf("vector search at %d %s rows: %v", n, dist, err))
				continue
			}
			vs.Server = server
			vs.Results = append(vs.Results, res)
			fmt.Fprintf(r.log, "vector search at %d %s rows: index built in %.1f s, p99 %.2f ms, smallest ef_search with recall@10 ≥ %.2f: %d\n",
				n, dist, res.IndexBuildSeconds, res.P99Ms, SearchRecallTarget, res.MinEfSearch)
		}
	}
	return vs, errs
}

// searchDistributions are the distributions measured at n of sizes:
// topics at every size, uniform and clustered at the smallest only.
// Uniform vectors are a graph index's known worst case, far from real
// embeddings; at 100,000 of them no ef_search pgvector allows reached
// recall@10 0.95 (0.63 at 1,000). Clustered vectors with noise in every
// dimension are as hard inside a cluster: at 1,000,000 of them recall@10
// stopped at 0.947 at ef_search 1,000, and their index took 14 minutes
// to build. Both are kept at the smallest size to show how far real
// embeddings are from them.
func searchDistributions(n int, sizes []int) []string {
	if n == slices.Min(sizes) {
		return []string{distUniform, distClustered, distTopics}
	}
	return []string{distTopics}
}

// pgvector starts PostgreSQL with pgvector from the pgvector root,
// stopped when the invocation's environment closes.
func (r *runner) pgvector(ctx context.Context) (*localenv.Postgres, error) {
	root, err := localenv.PgvectorRoot()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoPgvectorRoot
	}
	return r.in.env.LocalPgvector(ctx)
}

// searchAt loads rows unit vectors of distribution dist into a fresh
// database on the server at admin, builds the vector index over them
// with the project's own BuildIndex, and times searches through
// vectorstore's Search at each of efSearches, measuring their recall
// against an exact scan. It returns the figures and the server's
// versions.
func searchAt(ctx context.Context, admin string, rows int, dist string, seed uint64) (SearchResult, string, error) {
	db, err := createDB(ctx, admin, searchDims)
	if err != nil {
		return SearchResult{}, "", err
	}
	defer db.drop()
	store, err := vectorstore.Open(ctx, db.pool, searchDims)
	if err != nil {
		return SearchResult{}, "", err
	}
	if store.Mode() != vectorstore.ModeVector {
		return SearchResult{}, "", fmt.Errorf("migrated with %s, not pgvector's vector: the server lacks pgvector", store.Mode())
	}
	var server string
	err = db.pool.QueryRow(ctx, `SELECT 'PostgreSQL ' || current_setting('server_version') || ', pgvector ' || extversion
		FROM pg_extension WHERE extname = 'vector'`).Scan(&server)
	if err != nil {
		return SearchResult{}, "", fmt.Errorf("server versions: %w", err)
	}
	res := SearchResult{Rows: rows, Dims: searchDims, Distribution: dist, Searches: searchCount}
	rng := rand.New(rand.NewPCG(seed, 11))
	src := newVectorSource(dist, rows, rng)
	start := time.Now()
	if err := loadVectors(ctx, db, rows, func() []float32 { return src.draw(rng) }); err != nil {
		return res, server, err
	}
	res.LoadSeconds = time.Since(start).Seconds()
	if res.IndexBuildSeconds, err = buildIndex(ctx, db, store); err != nil {
		return res, server, err
	}
	if err := db.pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, vectorstore.HNSWIndex).Scan(&res.IndexBytes); err != nil {
		return res, server, fmt.Errorf("index size: %w", err)
	}
	queries := make([][]float32, searchWarmup+searchCount)
	for i := range queries {
		queries[i] = src.draw(rng)
	}
	if err := sweep(ctx, db, store, queries, &res); err != nil {
		return res, server, err
	}
	return res, server, nil
}

// loadVectors copies n ready documents of one chunk each into documents,
// and their chunks, each with the next vector of next, into
// chunk_embeddings, as the pipeline would leave them. The two COPYs run
// side by side, and the vectors are drawn and encoded ahead of the one
// that takes them, on a goroutine of their own: drawing took about a
// third of a load done in one line. No more than loadAhead rows are held
// in memory.
func loadVectors(ctx context.Context, db *database, n int, next func() []float32) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vecs := make(chan []byte, loadAhead)
	go func() {
		defer close(vecs)
		for range n {
			select {
			case vecs <- vectorBinary(make([]byte, 0, 4+4*searchDims), next()):
			case <-ctx.Done():
				return
			}
		}
	}()
	var docsErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if docsErr = copyDocuments(ctx, db, n); docsErr != nil {
			cancel()
		}
	})
	err := copyEmbeddings(ctx, db, n, vecs)
	if err != nil {
		cancel()
	}
	wg.Wait()
	return errors.Join(docsErr, err)
}

// loadAhead is how many encoded vectors loadVectors draws ahead of the
// COPY.
const loadAhead = 1024

// loadHash is the content hash of every loaded row.
const loadHash = "bench"

// copyDocuments copies n ready documents of one chunk each into
// documents.
func copyDocuments(ctx context.Context, db *database, n int) error {
	i := 0
	_, err := db.pool.CopyFrom(ctx, pgx.Identifier{"documents"},
		[]string{"doc_id", "source_id", "source_native_id", "version", "content_hash", "chunk_count", "status"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			id := docID(i)
			i++
			return []any{id, benchSource, id, 1, loadHash, 1, string(manifest.DocReady)}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy documents: %w", err)
	}
	return nil
}

// copyEmbeddings copies the chunks of n documents into chunk_embeddings,
// with the vectors vecs brings, encoded in pgvector's binary format.
func copyEmbeddings(ctx context.Context, db *database, n int, vecs <-chan []byte) error {
	i := 0
	_, err := db.pool.CopyFrom(ctx, pgx.Identifier{"chunk_embeddings"},
		[]string{"doc_id", "chunk_index", "version", "content_hash", "model", "dims", "embedding", "text"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			vec, ok := <-vecs
			if !ok {
				return nil, ctx.Err()
			}
			id := docID(i)
			i++
			return []any{id, 0, 1, loadHash, simModel, searchDims, vec, "chunk of " + id}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy chunk_embeddings: %w", err)
	}
	return nil
}

// vectorBinary appends v to dst in pgvector's binary format (vector_recv):
// the dimension and a zero as 16-bit integers, then each element as a
// 32-bit float, all big-endian. pgx knows no vector type, and sends a
// []byte to a column of a type it does not know as these very bytes.
func vectorBinary(dst []byte, v []float32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	dst = binary.BigEndian.AppendUint16(dst, 0)
	for _, x := range v {
		dst = binary.BigEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// buildIndex builds the store's vector index on one connection with
// maintenance_work_mem at indexWorkMem, and returns how long it took.
func buildIndex(ctx context.Context, db *database, store *vectorstore.Postgres) (float64, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '"+indexWorkMem+"'"); err != nil {
		return 0, fmt.Errorf("set maintenance_work_mem: %w", err)
	}
	start := time.Now()
	if err := store.BuildIndex(ctx, conn); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// sweep finds the exact top 10 of the timed queries' first
// searchRecallQueries by a scan of every row, then, at each of
// efSearches the sweep goes on to, times the searches (queries' first
// searchWarmup untimed) and measures their recall, filling res.
func sweep(ctx context.Context, db *database, store *vectorstore.Postgres, queries [][]float32, res *SearchResult) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	timed := queries[searchWarmup:]
	exact, err := exactTop(ctx, conn, store, timed[:min(searchRecallQueries, len(timed))])
	if err != nil {
		return err
	}
	for _, ef := range efSearches {
		if !moreEfSearch(ef, res.Sweep) {
			break
		}
		r, err := searchAtEf(ctx, conn, store, ef, queries, exact)
		if err != nil {
			return err
		}
		res.Sweep = append(res.Sweep, r)
		if ef == pgvectorDefaultEfSearch {
			res.P50Ms, res.P99Ms = r.P50Ms, r.P99Ms
		}
		if res.MinEfSearch == 0 && r.Recall >= SearchRecallTarget {
			res.MinEfSearch = ef
		}
	}
	return nil
}

// exactTop returns the exact top 10 keys of each query: the same search
// through vectorstore's Search with index scans off, so that PostgreSQL
// scans and sorts every row. Every statement on conn is planned afresh
// from then on (plan_cache_mode): a generic plan cached while index scans
// were off would otherwise serve the index searches after them too, and
// measure the exact scan against itself.
func exactTop(ctx context.Context, conn *pgxpool.Conn, store *vectorstore.Postgres, queries [][]float32) ([][]string, error) {
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_custom_plan"); err != nil {
		return nil, fmt.Errorf("exact scan: %w", err)
	}
	if _, err := conn.Exec(ctx, "SET enable_indexscan = off"); err != nil {
		return nil, fmt.Errorf("exact scan: %w", err)
	}
	exact := make([][]string, len(queries))
	for i, q := range queries {
		var err error
		if exact[i], _, err = searchKeys(ctx, conn, store, q); err != nil {
			return nil, fmt.Errorf("exact scan: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, "RESET enable_indexscan"); err != nil {
		return nil, err
	}
	return exact, nil
}

// searchAtEf times the searches for queries, the first searchWarmup
// untimed, at hnsw.ef_search ef, and measures the recall@10 of the timed
// ones against exact, the exact top 10 of as many of them.
func searchAtEf(ctx context.Context, conn *pgxpool.Conn, store *vectorstore.Postgres, ef int, queries [][]float32, exact [][]string) (EfSearchResult, error) {
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET hnsw.ef_search = %d", ef)); err != nil {
		return EfSearchResult{}, fmt.Errorf("set hnsw.ef_search: %w", err)
	}
	var ms []float64
	found := 0
	for i, q := range queries {
		keys, elapsed, err := searchKeys(ctx, conn, store, q)
		if err != nil {
			return EfSearchResult{}, err
		}
		if i < searchWarmup {
			continue
		}
		ms = append(ms, float64(elapsed)/float64(time.Millisecond))
		if j := i - searchWarmup; j < len(exact) {
			found += overlap(keys, exact[j])
		}
	}
	return EfSearchResult{EfSearch: ef, Recall: float64(found) / float64(10*max(1, len(exact))),
		P50Ms: quantile(ms, 0.5), P99Ms: quantile(ms, 0.99)}, nil
}

// searchKeys searches for the top 10 of q through vectorstore's Search
// and returns their keys and how long the search took. A search that
// finds nothing fails: the loaded rows would not be searchable.
func searchKeys(ctx context.Context, conn vectorstore.DB, store *vectorstore.Postgres, q []float32) ([]string, time.Duration, error) {
	start := time.Now()
	hits, err := store.Search(ctx, conn, q, vectorstore.SearchOptions{K: 10})
	elapsed := time.Since(start)
	if err != nil {
		return nil, 0, err
	}
	if len(hits) == 0 {
		return nil, 0, errors.New("a search found nothing among the loaded rows")
	}
	keys := make([]string, len(hits))
	for i, h := range hits {
		keys[i] = fmt.Sprintf("%s/%d", h.DocID, h.ChunkIndex)
	}
	return keys, elapsed, nil
}

// overlap counts the keys of got that want holds.
func overlap(got, want []string) int {
	n := 0
	for _, k := range got {
		if slices.Contains(want, k) {
			n++
		}
	}
	return n
}

// minEf renders s.MinEfSearch, or, when no ef_search reached the recall
// target, the largest tried.
func minEf(s SearchResult) string {
	if s.MinEfSearch > 0 {
		return fmt.Sprint(s.MinEfSearch)
	}
	if len(s.Sweep) == 0 {
		return "none tried"
	}
	return fmt.Sprintf("none up to %d", s.Sweep[len(s.Sweep)-1].EfSearch)
}

// SearchTarget is the search result RatioSearchP99 is taken from: the
// 1,000,000 topic vectors', or nil when vs lacks them.
func SearchTarget(vs *VectorSearch) *SearchResult {
	if vs == nil {
		return nil
	}
	for i, res := range vs.Results {
		if res.Rows == searchTargetRows && res.Distribution == distTopics {
			return &vs.Results[i]
		}
	}
	return nil
}

// searchRatio is RatioSearchP99 from vs: the p99 at SearchTarget's
// smallest ef_search reaching SearchRecallTarget, or, when none reached
// it, at the largest tried, as missed.
func searchRatio(vs *VectorSearch) Ratio {
	q := Ratio{Name: RatioSearchP99, Target: targetOf(RatioSearchP99)}
	res := SearchTarget(vs)
	if res == nil || len(res.Sweep) == 0 {
		return q
	}
	at := res.Sweep[len(res.Sweep)-1]
	for _, e := range res.Sweep {
		if e.EfSearch == res.MinEfSearch {
			at = e
		}
	}
	met := res.MinEfSearch > 0 && at.P99Ms <= searchP99TargetMs
	q.Value, q.Met = at.P99Ms, &met
	return q
}

// writeVectorSearch prints the vector index and search figures, or why
// there are none.
func writeVectorSearch(b *strings.Builder, r *Report) {
	vs := r.VectorSearch
	if vs == nil {
		return
	}
	b.WriteString("\n## Vector index and search (pgvector HNSW)\n\n")
	if vs.Skipped != "" {
		fmt.Fprintf(b, "skipped: %s\n", vs.Skipped)
		return
	}
	fmt.Fprintf(b, "%s; %d searches of %d hits each, one after another, after %d untimed\n\n",
		vs.Server, searchCount, vectorstore.DefaultSearchK, searchWarmup)
	b.WriteString("| rows | vectors | dims | COPY s | index build s | index MiB | search p50 ms | search p99 ms | smallest ef_search with recall@10 ≥ 0.95 |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range vs.Results {
		fmt.Fprintf(b, "| %s | %s | %d | %.1f | %.1f | %.0f | %.2f | %.2f | %s |\n", num(float64(s.Rows)), s.Distribution, s.Dims, s.LoadSeconds,
			s.IndexBuildSeconds, float64(s.IndexBytes)/(1<<20), s.P50Ms, s.P99Ms, minEf(s))
	}
	fmt.Fprintf(b, "\nrecall@10 against an exact scan over %d queries, latency over %d, by hnsw.ef_search:\n\n", searchRecallQueries, searchCount)
	b.WriteString("| rows | vectors | ef_search | recall@10 | p50 ms | p99 ms |\n| ---: | --- | ---: | ---: | ---: | ---: |\n")
	for _, s := range vs.Results {
		for _, e := range s.Sweep {
			fmt.Fprintf(b, "| %s | %s | %d | %.3f | %.2f | %.2f |\n", num(float64(s.Rows)), s.Distribution, e.EfSearch, e.Recall, e.P50Ms, e.P99Ms)
		}
	}
}
