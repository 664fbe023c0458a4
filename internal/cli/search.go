package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/embedder"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// snippetWidth is how much of a chunk's text a search table shows.
const snippetWidth = 120

// searchResult is the JSON output of `sluice search`.
type searchResult struct {
	Query string `json:"query"`
	Model string `json:"model"`
	// Hits are nearest first.
	Hits []searchHit `json:"hits"`
}

// searchHit is one chunk found.
type searchHit struct {
	Rank           int     `json:"rank"`
	Score          float64 `json:"score"`
	DocID          string  `json:"doc_id"`
	SourceID       string  `json:"source_id"`
	SourceNativeID string  `json:"source_native_id"`
	ChunkIndex     int     `json:"chunk_index"`
	Version        int64   `json:"version"`
	Text           string  `json:"text"`
}

// searchOptions are the settings of `sluice search`.
type searchOptions struct {
	conn
	embedder config.Embedder
	dims     int
	k        int
	source   string
}

func runSearch(ctx context.Context, env Env, args []string) error {
	var o searchOptions
	l := newLoader(env, "search", &o.conn, false)
	config.RegisterEmbedder(l, &o.embedder)
	l.Int(&o.dims, "embedding-dims", "EMBEDDING_DIMS", migrations.DefaultDims, "embedding dimension the database was migrated for")
	l.Int(&o.k, "k", "", vectorstore.DefaultSearchK, "number of hits")
	l.String(&o.source, "source", "", "", "only documents of this source_id")
	pos, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(pos, " "))
	if query == "" {
		return usageErr("search needs the TEXT to look for: sluice search [flags] TEXT")
	}
	if o.k < 1 || o.k > vectorstore.MaxSearchK {
		return usageErr("--k %d: want 1..%d", o.k, vectorstore.MaxSearchK)
	}
	if err := o.embedder.Validate(); err != nil {
		return usageErr("%v", err)
	}
	pool, err := openPool(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := search(ctx, pool, o, query)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(env.Stdout, res)
	}
	if len(res.Hits) == 0 {
		fmt.Fprintln(env.Stderr, "no hits: no ready document matches (is anything ingested, and is --source right?)")
		return nil
	}
	return printSearch(env.Stdout, res.Hits)
}

// search opens the store before embedding, so that a database migrated for
// another dimension fails before a paid API call.
func search(ctx context.Context, pool *pgxpool.Pool, o searchOptions, query string) (*searchResult, error) {
	store, err := vectorstore.Open(ctx, pool, o.dims)
	if err != nil {
		return nil, err
	}
	emb, err := embedder.NewOpenAI(embedder.Config{
		URL: o.embedder.URL, Model: o.embedder.Model, APIKey: o.embedder.APIKey,
		Dims: o.dims, Encoding: o.embedder.Encoding,
	})
	if err != nil {
		return nil, err
	}
	embedCtx, cancel := context.WithTimeout(ctx, o.embedder.Timeout)
	vecs, err := emb.Embed(embedCtx, []string{query})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("embed the query with %s at %s: %w", o.embedder.Model, o.embedder.URL, err)
	}
	hits, err := store.Search(ctx, pool, vecs[0], vectorstore.SearchOptions{K: o.k, SourceID: o.source})
	if err != nil {
		return nil, err
	}
	docs, err := readDocNames(ctx, pool, hits)
	if err != nil {
		return nil, err
	}
	res := &searchResult{Query: query, Model: emb.Model(), Hits: make([]searchHit, len(hits))}
	for i, h := range hits {
		d := docs[h.DocID]
		res.Hits[i] = searchHit{Rank: i + 1, Score: h.Score, DocID: h.DocID, SourceID: d[0], SourceNativeID: d[1],
			ChunkIndex: h.ChunkIndex, Version: h.Version, Text: h.Text}
	}
	return res, nil
}

// readDocNames maps each hit's doc_id to its source_id and source_native_id.
func readDocNames(ctx context.Context, pool *pgxpool.Pool, hits []vectorstore.Hit) (map[string][2]string, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.DocID
	}
	rows, err := pool.Query(ctx, `SELECT doc_id, source_id, source_native_id FROM documents WHERE doc_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	names := map[string][2]string{}
	var id string
	var name [2]string
	_, err = pgx.ForEachRow(rows, []any{&id, &name[0], &name[1]}, func() error {
		names[id] = name
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	return names, nil
}

func printSearch(w io.Writer, hits []searchHit) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RANK\tSCORE\tSOURCE\tSOURCE_NATIVE_ID\tCHUNK\tTEXT")
	for _, h := range hits {
		fmt.Fprintf(tw, "%d\t%.3f\t%s\t%s\t%d\t%s\n", h.Rank, h.Score, cell(h.SourceID),
			elide(cell(h.SourceNativeID), nativeIDWidth), h.ChunkIndex, snippet(h.Text, snippetWidth))
	}
	return tw.Flush()
}
