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
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// VectorSearch is the vector index and the search latency at the scale
// runs' sizes, on PostgreSQL with pgvector: the invocation's own
// PostgreSQL has no pgvector, so these are measured on the one in the
// pgvector root (localenv.PgvectorRoot), over random unit vectors.
type VectorSearch struct {
	// Skipped says why nothing was measured, such as a missing pgvector
	// root; empty when measured.
	Skipped string `json:"skipped,omitempty"`
	// Server names the PostgreSQL and pgvector versions.
	Server string `json:"server,omitempty"`
	// Results are one per size.
	Results []SearchResult `json:"results,omitempty"`
}

// SearchResult is the vector index and searches over one number of rows.
type SearchResult struct {
	Rows int `json:"rows"`
	Dims int `json:"dims"`
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
)

// errNoPgvectorRoot is what the report says when the pgvector root is
// missing.
var errNoPgvectorRoot = errors.New("no pgvector root (make pgvector-root)")

// searchSizes are the row counts to search over: those of the selected
// scale runs.
func (c Config) searchSizes() []int {
	var out []int
	if c.selected(ScenarioScale) {
		out = append(out, c.ScaleChunks)
	}
	if c.selected(ScenarioScale1M) {
		out = append(out, c.Scale1MChunks)
	}
	return out
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
		res, server, err := searchAt(ctx, pg.URL, n, r.cfg.Seed)
		if err != nil {
			errs = append(errs, fmt.Sprintf("vector search at %d rows: %v", n, err))
			continue
		}
		vs.Server = server
		vs.Results = append(vs.Results, res)
		fmt.Fprintf(r.log, "vector search at %d rows: index built in %.1f s, p50 %.2f ms, p99 %.2f ms\n",
			n, res.IndexBuildSeconds, res.P50Ms, res.P99Ms)
	}
	return vs, errs
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

// searchAt loads rows random unit vectors into a fresh database on the
// server at admin, builds the vector index over them with the project's
// own BuildIndex, and times searches through vectorstore's Search. It
// returns the figures and the server's versions.
func searchAt(ctx context.Context, admin string, rows int, seed uint64) (SearchResult, string, error) {
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
	res := SearchResult{Rows: rows, Dims: searchDims, Searches: searchCount}
	rng := rand.New(rand.NewPCG(seed, 11))
	start := time.Now()
	if err := loadVectors(ctx, db, rows, rng); err != nil {
		return res, server, err
	}
	res.LoadSeconds = time.Since(start).Seconds()
	if res.IndexBuildSeconds, err = buildIndex(ctx, db, store); err != nil {
		return res, server, err
	}
	if err := db.pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, vectorstore.HNSWIndex).Scan(&res.IndexBytes); err != nil {
		return res, server, fmt.Errorf("index size: %w", err)
	}
	ms, err := timeSearches(ctx, db, store, rng)
	if err != nil {
		return res, server, err
	}
	res.P50Ms, res.P99Ms = quantile(ms, 0.5), quantile(ms, 0.99)
	return res, server, nil
}

// loadVectors copies n ready documents of one chunk each into documents,
// and their chunks, each with a random unit vector, into
// chunk_embeddings, as the pipeline would leave them. The rows are made
// as COPY asks for them: none is held in memory.
func loadVectors(ctx context.Context, db *database, n int, rng *rand.Rand) error {
	const hash = "bench"
	i := 0
	_, err := db.pool.CopyFrom(ctx, pgx.Identifier{"documents"},
		[]string{"doc_id", "source_id", "source_native_id", "version", "content_hash", "chunk_count", "status"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			id := docID(i)
			i++
			return []any{id, benchSource, id, 1, hash, 1, string(manifest.DocReady)}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy documents: %w", err)
	}
	i = 0
	var vec []byte
	_, err = db.pool.CopyFrom(ctx, pgx.Identifier{"chunk_embeddings"},
		[]string{"doc_id", "chunk_index", "version", "content_hash", "model", "dims", "embedding", "text"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			id := docID(i)
			i++
			vec = vectorBinary(vec[:0], unitVector(rng, searchDims))
			return []any{id, 0, 1, hash, simModel, searchDims, vec, "chunk of " + id}, nil
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

// timeSearches runs searchWarmup and then searchCount searches for random
// unit vectors, one after another on one connection, and returns the
// timed ones' latencies in milliseconds. A search that finds nothing
// fails: the loaded rows would not be searchable.
func timeSearches(ctx context.Context, db *database, store *vectorstore.Postgres, rng *rand.Rand) ([]float64, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	var ms []float64
	for i := range searchWarmup + searchCount {
		q := unitVector(rng, searchDims)
		start := time.Now()
		hits, err := store.Search(ctx, conn, q, vectorstore.SearchOptions{})
		elapsed := time.Since(start)
		if err != nil {
			return nil, err
		}
		if len(hits) == 0 {
			return nil, errors.New("a search found nothing among the loaded rows")
		}
		if i >= searchWarmup {
			ms = append(ms, float64(elapsed)/float64(time.Millisecond))
		}
	}
	return ms, nil
}

// writeVectorSearch prints the vector index and search figures, or why
// there are none.
func writeVectorSearch(b *strings.Builder, r *Report) {
	vs := r.VectorSearch
	if vs == nil {
		return
	}
	b.WriteString("\n## Vector index and search (pgvector HNSW, random unit vectors)\n\n")
	if vs.Skipped != "" {
		fmt.Fprintf(b, "skipped: %s\n", vs.Skipped)
		return
	}
	fmt.Fprintf(b, "%s; %d searches of %d hits each, one after another, after %d untimed\n\n",
		vs.Server, searchCount, vectorstore.DefaultSearchK, searchWarmup)
	b.WriteString("| rows | dims | COPY s | index build s | index MiB | search p50 ms | search p99 ms |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range vs.Results {
		fmt.Fprintf(b, "| %s | %d | %.1f | %.1f | %.0f | %.2f | %.2f |\n", num(float64(s.Rows)), s.Dims, s.LoadSeconds,
			s.IndexBuildSeconds, float64(s.IndexBytes)/(1<<20), s.P50Ms, s.P99Ms)
	}
}
