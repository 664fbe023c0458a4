package generation

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Cost is what embedding the chunks a generation still owes would cost,
// in the provider's tokens, counted on the text generation 1 holds of
// them, or a recut generation's own cut. A recut generation's documents
// not cut yet (Progress.Uncut) are not counted.
type Cost struct {
	Generation int `json:"generation"`
	// Tokens is the sum of the counted chunks' tokens.
	Tokens int64 `json:"tokens"`
	// Encoding is the tokenizer's; Exact is false when the model has no
	// known vocabulary and Tokens is an estimate.
	Encoding string `json:"encoding"`
	Exact    bool   `json:"exact"`
	// Counted are the owed chunks whose text generation 1 (or the recut
	// generation) holds at the chunk's current version and content.
	Counted int64 `json:"counted"`
	// Unheld are the owed chunks whose text it does not hold (not stored
	// there yet): their tokens are not in Tokens.
	Unheld int64 `json:"unheld"`
}

// costSQL is the text of each chunk a generation owes that it can
// embed: a recut generation's own, otherwise the one generation 1 holds;
// NULL where neither is held. chunksSQL follows it.
const costSQL = `
SELECT coalesce(m.cut_text, (SELECT e.text FROM chunk_embeddings e
        WHERE e.doc_id = m.doc_id AND e.chunk_index = m.chunk_index
          AND e.version = m.version AND e.content_hash = m.content_hash))`

// CostToFinish counts the tokens of the chunks generation g owes with
// its model's tokenizer (a later generation always records its model). It reads
// every owed chunk's text, one row at a time; generation 1, which the
// pipeline writes, has no such cost.
func CostToFinish(ctx context.Context, q manifest.Querier, g Generation) (Cost, error) {
	c := Cost{Generation: g.ID}
	if g.ID == First {
		return c, fmt.Errorf("generation 1 is written by the pipeline: what it owes is ingestion's, not a backfill's (%w)", vectorstore.ErrFirstGeneration)
	}
	counter, exact := tokens.ForModel(g.Model)
	c.Encoding, c.Exact = counter.Encoding(), exact
	rows, err := q.Query(ctx, costSQL+chunksSQL(g.ID, true)+`
		AND m.status <> `+manifest.SQLParked+` AND v.doc_id IS NULL AND gp.doc_id IS NULL`)
	if err != nil {
		return c, fmt.Errorf("cost of generation %d: %w", g.ID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var text *string
		if err := rows.Scan(&text); err != nil {
			return c, fmt.Errorf("cost of generation %d: %w", g.ID, err)
		}
		if text == nil {
			c.Unheld++
			continue
		}
		c.Counted++
		c.Tokens += int64(counter.Count(*text))
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("cost of generation %d: %w", g.ID, err)
	}
	return c, nil
}
