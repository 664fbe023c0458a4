package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// snippetWidth is how much of a chunk's text a search table shows.
const snippetWidth = 120

// searchResult is the JSON output of `sluice search`.
type searchResult struct {
	Query string `json:"query"`
	// Generation is the index generation searched, Model the model that
	// embedded the query: the generation's.
	Generation int    `json:"generation"`
	Model      string `json:"model"`
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
	// Metadata is the JSON object stored with the chunk: the document's
	// title, a JSONL line's fields; {} when it has none.
	Metadata json.RawMessage `json:"metadata"`
}

// searchOptions are the settings of `sluice search`.
type searchOptions struct {
	conn
	embedder   embedder.Settings
	generation int
	k          int
	source     string
}

func runSearch(ctx context.Context, env Env, args []string) error {
	var o searchOptions
	l := newLoader(env, "search", &o.conn, false)
	o.embedder.Register(l)
	l.Int(&o.generation, "generation", "", 0, "the index generation to search (see sluice index ls); 0 for the active one")
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
	if o.generation < 0 {
		return usageErr("--generation %d: give a generation number from sluice index ls, or 0 for the active one", o.generation)
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

// search reads the generation to search, embeds the query with its
// model and searches its vectors, all in one read-only snapshot: an
// activation committed meanwhile changes nothing of this search, which is
// wholly of the generation that was active when it began. The store is
// opened before embedding, so that a damaged database fails before a paid
// API call.
func search(ctx context.Context, pool *pgxpool.Pool, o searchOptions, query string) (*searchResult, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin the search: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	g, err := searchedGeneration(ctx, tx, o.generation)
	if err != nil {
		return nil, err
	}
	store, err := vectorstore.OpenGeneration(ctx, tx, g.ID, g.Dims)
	if err != nil {
		return nil, err
	}
	emb, err := queryEmbedder(g, o.embedder)
	if err != nil {
		return nil, err
	}
	vecs, err := embedQueries(ctx, emb, o.embedder, []string{query})
	if err != nil {
		return nil, err
	}
	hits, err := store.Search(ctx, tx, vecs[0], vectorstore.SearchOptions{K: o.k, SourceID: o.source})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.DocID
	}
	docs, err := manifest.Names(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	res := &searchResult{Query: query, Generation: g.ID, Model: emb.Model(), Hits: make([]searchHit, len(hits))}
	for i, h := range hits {
		d := docs[h.DocID]
		res.Hits[i] = searchHit{Rank: i + 1, Score: h.Score, DocID: h.DocID, SourceID: d.SourceID, SourceNativeID: d.SourceNativeID,
			ChunkIndex: h.ChunkIndex, Version: h.Version, Text: h.Text, Metadata: h.Metadata}
		if len(h.Metadata) == 0 {
			res.Hits[i].Metadata = json.RawMessage(`{}`)
		}
	}
	return res, nil
}

// queryEmbedder embeds queries as generation g's vectors were: with its
// model (the settings' for a generation 1 that never recorded one) at its
// dimension. A blip is retried and a 429 waited out (its Retry-After, up
// to the resilient client's ThrottleMaxWait), as the pipeline's calls
// are: one throttled answer does not fail a search.
func queryEmbedder(g generation.Generation, cfg embedder.Settings) (*embedder.Resilient, error) {
	client, err := embedder.NewOpenAI(cfg.Client(cmp.Or(g.Model, cfg.Model), g.Dims))
	if err != nil {
		return nil, err
	}
	return embedder.NewResilient(client, embedder.ResilientConfig{Timeout: cfg.Timeout})
}

// embedQueries embeds queries in one call bounded by the settings'
// timeout and the resilient client's retries.
func embedQueries(ctx context.Context, emb *embedder.Resilient, cfg embedder.Settings, queries []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, embedder.ResilientConfig{Timeout: cfg.Timeout}.WorstCase())
	defer cancel()
	vecs, err := emb.Embed(ctx, queries)
	if err != nil {
		return nil, fmt.Errorf("embed the queries with %s at %s: %w", emb.Model(), cfg.URL, err)
	}
	return vecs, nil
}

// searchedGeneration is generation id, or the active one for 0; a
// dropped generation has nothing to search.
func searchedGeneration(ctx context.Context, tx pgx.Tx, id int) (generation.Generation, error) {
	if id == 0 {
		return generation.GetActive(ctx, tx)
	}
	g, err := generation.Get(ctx, tx, id)
	if err == nil && g.Status == generation.Dropped {
		return g, fmt.Errorf("generation %d was dropped: it has no vectors to search (see sluice index ls)", id)
	}
	return g, err
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
