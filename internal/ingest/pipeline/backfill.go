package pipeline

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Backfill writes chunks a later index generation owes (owed[i] is
// jobs[i]'s) into the pipeline's store, which must be that generation's
// (vectorstore.OpenGeneration), with the pipeline's embedder, which must
// be its model's. Each chunk's text is the one generation 1 holds at the
// chunk's version and content, or a recut generation's own cut of it
// (heldTexts); a chunk that changed or went since it was owed is
// Superseded, its new version being owed on its own. The
// rest goes through the live path's stages: reuse of the generation's
// vectors of the same text, the embedder under each source's budget, the
// same classification and delivery budget, and an upsert under the same
// version guard, committed with the chunks' documents locked against a
// concurrent delete. A chunk the generation cannot embed is parked in
// the generation alone (generation.Park): it stays stored in the others.
//
// Like Process, it returns an error only when the database could not
// answer or commit; then no job may be acknowledged.
func (p *Pipeline) Backfill(ctx context.Context, jobs []*Job, owed []generation.Owed) error {
	if len(jobs) != len(owed) {
		return fmt.Errorf("backfill: %d jobs for %d owed chunks", len(jobs), len(owed))
	}
	gen := p.gen
	keys := make([]vectorstore.HeldKey, len(owed))
	for i, o := range owed {
		if o.Generation != gen {
			return fmt.Errorf("backfill: a chunk owed to generation %d given to generation %d's pipeline", o.Generation, gen)
		}
		keys[i] = vectorstore.HeldKey{DocID: o.DocID, ChunkIndex: o.ChunkIndex, Version: o.Version, ContentHash: o.ContentHash}
	}
	held, err := p.heldTexts(ctx, p.pool, keys)
	if err != nil {
		return p.undecide(jobs, err)
	}
	var live []*Job
	// A chunk can be owed twice at once (queued by its store transaction
	// and by a scan): the batch stores it once, and its other messages
	// are acknowledged as duplicates.
	seen := make(map[vectorstore.HeldKey]bool, len(keys))
	for i, j := range jobs {
		h, ok := held[keys[i]]
		switch {
		case !ok:
			j.Outcome = Superseded
			continue
		case seen[keys[i]]:
			j.Outcome = Duplicate
			continue
		}
		seen[keys[i]] = true
		o := owed[i]
		j.chunk = messages.ChunkJob{DocID: o.DocID, ChunkIndex: o.ChunkIndex, DocVersion: o.Version, ContentHash: o.ContentHash,
			SourceID: o.SourceID, Text: h.Text, Metadata: h.Metadata}
		live = append(live, j)
	}
	toStore, forget, err := p.vectors(ctx, live)
	defer forget()
	if err != nil {
		return p.undecide(jobs, err)
	}
	if err := p.storeWith(ctx, toStore, p.storeGenerationTx); err != nil {
		return p.undecide(jobs, err)
	}
	if err := p.parkInGeneration(ctx, gen, jobs); err != nil {
		return p.undecide(jobs, err)
	}
	p.countOutcomes(jobs)
	return nil
}

// heldTexts returns the text of each key that generation 1 holds and,
// for the keys it does not, the text the pipeline's generation cut of
// them if it is recut: a chunk of a recut generation that generation 1
// holds at the same version and content has the same text. A key
// neither holds is absent.
func (p *Pipeline) heldTexts(ctx context.Context, db vectorstore.DB, keys []vectorstore.HeldKey) (map[vectorstore.HeldKey]vectorstore.Held, error) {
	held, err := vectorstore.HeldTexts(ctx, db, keys)
	if err != nil || len(held) == len(keys) {
		return held, err
	}
	var rest []vectorstore.HeldKey
	for _, k := range keys {
		if _, ok := held[k]; !ok {
			rest = append(rest, k)
		}
	}
	cut, err := generation.CutTexts(ctx, db, p.gen, rest)
	if err != nil {
		return nil, err
	}
	if held == nil {
		held = make(map[vectorstore.HeldKey]vectorstore.Held, len(cut))
	}
	maps.Copy(held, cut)
	return held, nil
}

// storeGenerationTx stores a later generation's vectors, or nothing once
// the generation is dropped (its jobs are Superseded): the generation's
// registry row and the documents are share-locked in key order first, so that a delete committing
// meanwhile either waits for this commit (and then erases what it
// wrote) or commits first (and then the version guard refuses every
// record of it). The manifest is generation 1's and is not touched.
func (p *Pipeline) storeGenerationTx(ctx context.Context, jobs []*Job) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		live, err := generation.LockForWrite(ctx, tx, p.gen)
		if err != nil {
			return err
		}
		if !live {
			for _, j := range jobs {
				j.Outcome = Superseded
			}
			return nil
		}
		if err := manifest.ShareDocuments(ctx, tx, distinctDocs(jobs)); err != nil {
			return fmt.Errorf("lock documents: %w", err)
		}
		return p.storeGenerationIn(ctx, tx, jobs)
	})
}

// storeGenerationIn upserts a later generation's vectors in tx, which
// holds the generation's write lock and the documents' share locks, and
// takes the chunks out of the generation's parked ones.
func (p *Pipeline) storeGenerationIn(ctx context.Context, tx pgx.Tx, jobs []*Job) error {
	if _, err := p.store.Upsert(ctx, tx, p.records(jobs)); err != nil {
		return err
	}
	ids, indexes := make([]string, len(jobs)), make([]int32, len(jobs))
	for i, j := range jobs {
		ids[i], indexes[i] = j.chunk.DocID, int32(j.chunk.ChunkIndex)
	}
	if err := generation.Unpark(ctx, tx, p.gen, ids, indexes); err != nil {
		return err
	}
	for _, j := range jobs {
		j.Outcome = Stored
	}
	return nil
}

// parkInGeneration records the parked jobs in generation gen's
// generation_parked, in one transaction.
func (p *Pipeline) parkInGeneration(ctx context.Context, gen int, jobs []*Job) error {
	chunks := parkedChunks(gen, jobs)
	if len(chunks) == 0 {
		return nil
	}
	if err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error { return generation.Park(ctx, tx, chunks) }); err != nil {
		return fmt.Errorf("park in generation %d: %w", gen, err)
	}
	return nil
}

// parkedChunks are the Parked jobs as generation gen parks them, in key
// order.
func parkedChunks(gen int, jobs []*Job) []generation.ParkedChunk {
	var chunks []generation.ParkedChunk
	for _, j := range jobs {
		if j.Outcome != Parked || j.chunk.DocID == "" {
			continue
		}
		c := &j.chunk
		detail := ""
		if j.Failure.Err != nil {
			detail = messages.TruncateDetail(config.Redact(j.Failure.Err.Error()))
		}
		chunks = append(chunks, generation.ParkedChunk{
			Owed: generation.Owed{Generation: gen, DocID: c.DocID, ChunkIndex: c.ChunkIndex, Version: c.DocVersion,
				ContentHash: c.ContentHash, SourceID: c.SourceID},
			ErrorClass: j.Failure.ParkedClass, ErrorDetail: detail, Attempts: j.Delivered})
	}
	sort.Slice(chunks, func(a, b int) bool {
		if chunks[a].DocID != chunks[b].DocID {
			return chunks[a].DocID < chunks[b].DocID
		}
		return chunks[a].ChunkIndex < chunks[b].ChunkIndex
	})
	return chunks
}

// FailUndecodable parks a backfill message that cannot be decoded: it
// names no chunk, so nothing records it but the message's termination
// and the log.
func FailUndecodable(j *Job, err error) {
	err = classify.Permanent(classify.ClassInvalidMessage, err)
	d := classify.Classify(err)
	j.Outcome, j.Failure = Parked, &Failure{Decision: d, Stage: StageDecode, Err: err, ParkedClass: d.Class}
}
