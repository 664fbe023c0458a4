package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Bounds of `sluice index compare`'s queries file.
const (
	// maxCompareQueries is how many queries one comparison takes: each
	// is embedded twice, by a paid API.
	maxCompareQueries = 1000
	// compareBatch is how many queries one embedding request carries.
	compareBatch = 100
	// maxQueryBytes is the longest line of the queries file.
	maxQueryBytes = 64 << 10
)

// compareSummary is the command's help: what it does and the measures
// it reports.
const compareSummary = "how far two generations' top-k results agree: compare A B --queries FILE [--k 10]; " +
	"overlap@k is the share of the k chunks (doc_id, chunk_index) both lists hold, " +
	"RR the reciprocal rank in B of A's top hit (1 first, 1/2 second, 0 absent) and MRR its mean"

// compareSide is one generation of a comparison.
type compareSide struct {
	Generation int    `json:"generation"`
	Model      string `json:"model"`
	Dims       int    `json:"dims"`
}

// compareQuery is one query's agreement.
type compareQuery struct {
	Query string `json:"query"`
	generation.Agreement
}

// compareResult is the JSON output of `sluice index compare`.
type compareResult struct {
	A       compareSide        `json:"a"`
	B       compareSide        `json:"b"`
	K       int                `json:"k"`
	Queries []compareQuery     `json:"queries"`
	Overall generation.Summary `json:"overall"`
}

func runIndexCompare(ctx context.Context, env Env, args []string) error {
	var c conn
	var emb embedder.Settings
	var file string
	var k int
	l := newLoader(env, "index compare", &c, false)
	emb.Register(l)
	l.String(&file, "queries", "", "", "file of queries, one a line (required); each is embedded with each generation's own model and dimension")
	l.Int(&k, "k", "", vectorstore.DefaultSearchK, "how many hits of each generation to compare (overlap@k divides by k, or by the longer list when the corpus holds fewer chunks)")
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	ids, err := compareArgs(rest)
	if err != nil {
		return err
	}
	if k < 1 || k > vectorstore.MaxSearchK {
		return usageErr("--k %d: want 1..%d", k, vectorstore.MaxSearchK)
	}
	if err := emb.Validate(); err != nil {
		return usageErr("%v", err)
	}
	queries, err := readQueries(file)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := compare(ctx, pool, emb, ids, queries, k)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, res)
	}
	return printCompare(env.Stdout, res)
}

// compareArgs reads the two generation numbers.
func compareArgs(rest []string) ([2]int, error) {
	var ids [2]int
	if len(rest) != 2 {
		return ids, usageErr("index compare takes two generation numbers (see sluice index ls), got %q", rest)
	}
	for i, a := range rest {
		id, err := strconv.Atoi(a)
		if err != nil || id < 1 {
			return ids, usageErr("index compare: %q is not a generation number: give one from sluice index ls, such as 2", a)
		}
		ids[i] = id
	}
	return ids, nil
}

// readQueries reads the non-blank lines of file, at most
// maxCompareQueries.
func readQueries(file string) ([]string, error) {
	if file == "" {
		return nil, usageErr("index compare needs --queries FILE: a file of queries, one a line")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, usageErr("--queries: %v", err)
	}
	defer f.Close()
	var queries []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), maxQueryBytes)
	for line := 1; sc.Scan(); line++ {
		q := strings.TrimSpace(sc.Text())
		if q == "" {
			continue
		}
		if len(queries) == maxCompareQueries {
			return nil, usageErr("--queries %s: more than %d queries; compare a sample of them", file, maxCompareQueries)
		}
		queries = append(queries, q)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, usageErr("--queries %s: a line is longer than %d bytes; a query is one line of text", file, maxQueryBytes)
	} else if err != nil {
		return nil, fmt.Errorf("read --queries %s: %w", file, err)
	}
	if len(queries) == 0 {
		return nil, usageErr("--queries %s holds no query: write one query a line", file)
	}
	return queries, nil
}

// compareSnapshot is one generation opened for searching: its registry
// row and store, read in one read-only snapshot that its searches use
// too.
type compareSnapshot struct {
	tx    pgx.Tx
	g     generation.Generation
	store *vectorstore.Postgres
}

// openSnapshot begins generation id's snapshot; the caller rolls back
// its transaction.
func openSnapshot(ctx context.Context, pool *pgxpool.Pool, id int) (*compareSnapshot, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin the comparison: %w", err)
	}
	s := &compareSnapshot{tx: tx}
	if s.g, err = searchedGeneration(ctx, tx, id); err == nil {
		s.store, err = vectorstore.OpenGeneration(ctx, tx, s.g.ID, s.g.Dims)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return s, nil
}

// compare searches every query in both generations and measures how far
// their hits agree. Both generations are read before any query is
// embedded, so that an unknown or dropped one fails before a paid call.
func compare(ctx context.Context, pool *pgxpool.Pool, emb embedder.Settings, ids [2]int, queries []string, k int) (*compareResult, error) {
	var snaps [2]*compareSnapshot
	for i, id := range ids {
		s, err := openSnapshot(ctx, pool, id)
		if err != nil {
			return nil, err
		}
		defer func() { _ = s.tx.Rollback(ctx) }()
		snaps[i] = s
	}
	var lists [2][][]generation.Hit
	var sides [2]compareSide
	for i, s := range snaps {
		e, err := queryEmbedder(s.g, emb)
		if err != nil {
			return nil, err
		}
		sides[i] = compareSide{Generation: s.g.ID, Model: e.Model(), Dims: s.g.Dims}
		if lists[i], err = s.searchAll(ctx, queries, k, func(batch []string) ([][]float32, error) {
			return embedQueries(ctx, e, emb, batch)
		}); err != nil {
			return nil, fmt.Errorf("generation %d: %w", s.g.ID, err)
		}
	}
	res := &compareResult{A: sides[0], B: sides[1], K: k, Queries: make([]compareQuery, len(queries))}
	ags := make([]generation.Agreement, len(queries))
	for i, q := range queries {
		ags[i] = generation.Agree(lists[0][i], lists[1][i])
		res.Queries[i] = compareQuery{Query: q, Agreement: ags[i]}
	}
	res.Overall = generation.Summarize(ags)
	return res, nil
}

// searchAll embeds the queries in batches and returns each one's top k
// hits in the snapshot's generation.
func (s *compareSnapshot) searchAll(ctx context.Context, queries []string, k int, embed func([]string) ([][]float32, error)) ([][]generation.Hit, error) {
	out := make([][]generation.Hit, 0, len(queries))
	for start := 0; start < len(queries); start += compareBatch {
		vecs, err := embed(queries[start:min(start+compareBatch, len(queries))])
		if err != nil {
			return nil, err
		}
		for _, v := range vecs {
			hits, err := s.store.Search(ctx, s.tx, v, vectorstore.SearchOptions{K: k})
			if err != nil {
				return nil, err
			}
			keys := make([]generation.Hit, len(hits))
			for j, h := range hits {
				keys[j] = generation.Hit{DocID: h.DocID, ChunkIndex: h.ChunkIndex}
			}
			out = append(out, keys)
		}
	}
	return out, nil
}

func printCompare(w io.Writer, res *compareResult) error {
	fmt.Fprintf(w, "generation %d (%s, %d dims) against generation %d (%s, %d dims), top %d of %d queries\n",
		res.A.Generation, res.A.Model, res.A.Dims, res.B.Generation, res.B.Model, res.B.Dims, res.K, len(res.Queries))
	tw := newTable(w)
	fmt.Fprintf(tw, "OVERLAP@%d\tRR\tQUERY\n", res.K)
	for _, q := range res.Queries {
		fmt.Fprintf(tw, "%.2f\t%.2f\t%s\n", q.Overlap, q.ReciprocalRank, snippet(q.Query, snippetWidth))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	o := res.Overall
	fmt.Fprintf(w, "overall: mean overlap@%d %.3f, MRR %.3f; %d of %d queries with no overlap\n", res.K, o.MeanOverlap, o.MRR, o.NoOverlap, o.Queries)
	for _, q := range res.Queries {
		if q.Disjoint() {
			fmt.Fprintf(w, "  no overlap: %s\n", snippet(q.Query, snippetWidth))
		}
	}
	return nil
}
