package producer

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// A recut index generation has a chunking of its own, so its chunks are
// other pieces of the documents than the ones generation 1 holds the
// text of. The producer cuts every document it reads, changed or not,
// for each recut generation that lacks it at the version the run
// records or finds, and records the cuts in the transaction that records
// the batch (generation.RecordCuts).

// recutPlan is one recut generation's cuts of a batch.
type recutPlan struct {
	gen  int
	cuts []generation.Cut
}

// planCuts cuts the batch's documents for each recut generation that
// has not cut them at the version the batch records (pl.docs) or found
// unchanged (current). A document that cannot be read is cut into no
// chunks: there is nothing of it to embed. A chunk that touches a
// secret is withheld, as the batch escalates it for generation 1.
func (p *Producer) planCuts(ctx context.Context, docs []corpus.Document, ids []string, current map[string]manifest.DocumentState, pl *plan) error {
	gens, err := generation.Recuts(ctx, p.pool)
	if err != nil || len(gens) == 0 {
		return err
	}
	versions := make(map[string]int64, len(docs))
	for id, st := range current {
		versions[id] = st.Version
	}
	for _, pd := range pl.docs {
		versions[pd.docID] = pd.version
	}
	for _, g := range gens {
		cut, err := generation.CutVersions(ctx, p.pool, g.ID, ids)
		if err != nil {
			return err
		}
		cfg := cutConfig(g)
		rp := recutPlan{gen: g.ID}
		for i, d := range docs {
			v, ok := versions[ids[i]]
			if !ok || cut[ids[i]] == v {
				continue
			}
			c, err := p.cut(ids[i], d, v, cfg)
			if err != nil {
				return fmt.Errorf("cut %s for generation %d: %w", d.NativeID, g.ID, err)
			}
			rp.cuts = append(rp.cuts, c)
		}
		if len(rp.cuts) > 0 {
			pl.recuts = append(pl.recuts, rp)
		}
	}
	return nil
}

// cutConfig is generation g's chunking, counting tokens as its model
// does.
func cutConfig(g generation.Generation) chunk.Config {
	c := chunk.Config{Size: g.Chunking.Size, Overlap: g.Chunking.Overlap, Unit: chunk.Unit(g.Chunking.Unit)}
	if c.Unit == chunk.UnitTokens {
		c.Tokens, _ = tokens.ForModel(g.Model)
	}
	return c
}

// cut cuts document d, whose id is docID, at version with cfg.
func (p *Producer) cut(docID string, d corpus.Document, version int64, cfg chunk.Config) (generation.Cut, error) {
	c := generation.Cut{DocID: docID, SourceID: p.cfg.SourceID, Version: version}
	meta, _, rejected := corpus.Admit(d)
	if rejected != nil || d.Status != corpus.StatusOK {
		return c, nil
	}
	chunks, withheld := p.splitScreened(d, cfg)
	c.Chunks = make([]generation.CutChunk, len(chunks))
	for i, ch := range chunks {
		cm, err := d.ChunkMetadata(meta, ch.Start, ch.End)
		if err != nil {
			return c, err
		}
		cc := generation.CutChunk{Index: ch.Index, Text: ch.Text, Metadata: cm}
		if rule, ok := withheld[i]; ok {
			// Not even a hash of the text is kept: the redaction's, as
			// generation 1's escalated job has.
			cc = generation.CutChunk{Index: ch.Index, Text: messages.RedactedText(rule), Withheld: true}
		}
		if cc.ContentHash, err = messages.ContentHash(cc.Text, cc.Metadata); err != nil {
			return c, err
		}
		c.Chunks[i] = cc
	}
	return c, nil
}

// recordCuts writes the batch's cuts in its record transaction, leaving
// out the documents deleted since the plan: their rows are locked first,
// so a delete either committed before and is seen, or waits for this
// commit and then erases the cuts with the rest.
func recordCuts(ctx context.Context, tx pgx.Tx, pl *plan) error {
	if len(pl.recuts) == 0 {
		return nil
	}
	var ids []string
	for _, rp := range pl.recuts {
		for _, c := range rp.cuts {
			ids = append(ids, c.DocID)
		}
	}
	deleted, err := manifest.Deleted(ctx, tx, ids)
	if err != nil {
		return err
	}
	for _, rp := range pl.recuts {
		cuts := slices.DeleteFunc(rp.cuts, func(c generation.Cut) bool { return deleted[c.DocID] })
		if err := generation.RecordCuts(ctx, tx, rp.gen, cuts); err != nil {
			return err
		}
	}
	return nil
}
