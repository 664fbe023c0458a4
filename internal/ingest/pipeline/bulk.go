package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Ledger is bulk mode's ledger as the pipeline uses it (bulk.Ledger).
type Ledger interface {
	Admit(ctx context.Context, tx pgx.Tx, members []bulk.Member) error
}

// The pipeline is the ledger's Applier and Requeuer: a batch's results
// go through the live path's store and park, and what a batch did not
// answer goes back to INGEST.
var (
	_ bulk.Applier  = (*Pipeline)(nil)
	_ bulk.Requeuer = (*Pipeline)(nil)
)

// admit hands the jobs of bulk-mode sources among send (those the store
// had no vector for) to the ledger, with their twins, and returns the
// jobs left to embed live. A job goes live instead when it is a replay
// (an operator wants its answer now), when it has been through its
// source's batch attempts, or when no batch could take it. Admission
// commits with the jobs' documents locked: a deleted document's job is
// Superseded and leaves no text in the ledger.
func (p *Pipeline) admit(ctx context.Context, send []*Job, tw twins) ([]*Job, error) {
	if p.ledger == nil {
		return send, nil
	}
	var leads []*Job
	for _, j := range send {
		if !j.Replay && p.batchAttempts(j.chunk.SourceID) > 0 {
			leads = append(leads, j)
		}
	}
	if len(leads) == 0 {
		return send, nil
	}
	keys := make([]bulk.Key, len(leads))
	for i, j := range leads {
		keys[i] = p.bulkKey(j)
	}
	requeued, pending, err := bulk.Attempts(ctx, p.pool, keys)
	if err != nil {
		return nil, err
	}
	batched := map[*Job]bool{}
	var held []*Job
	for _, j := range leads {
		k := p.bulkKey(j)
		switch {
		case pending[k]:
			// A redelivery of a job the ledger holds already; its twins
			// are other chunks, admitted on their own.
			j.Outcome, batched[j] = Duplicate, true
			held = append(held, tw[j]...)
		case requeued[k] < p.batchAttempts(j.chunk.SourceID):
			batched[j] = true
			held = append(held, j)
			held = append(held, tw[j]...)
		}
	}
	refused, err := p.admitHeld(ctx, held)
	if err != nil {
		return nil, err
	}
	live := send[:0:0]
	for _, j := range send {
		if batched[j] && !refused[j] {
			for _, twin := range tw[j] {
				if refused[twin] {
					live = append(live, twin)
				}
			}
			delete(tw, j)
			continue
		}
		if j.Outcome == Undecided {
			live = append(live, j)
		}
	}
	return live, nil
}

// admitHeld admits jobs to the ledger in one transaction, and returns
// those no batch could take, which go live. The others are Batched,
// Superseded when their document was deleted, or left Undecided with the
// vector a batch stored for their text meanwhile.
func (p *Pipeline) admitHeld(ctx context.Context, jobs []*Job) (map[*Job]bool, error) {
	refused := map[*Job]bool{}
	for len(jobs) > 0 {
		var held heldJobs
		err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			var err error
			if held, err = p.sortHeld(ctx, tx, jobs); err != nil || len(held.members) == 0 {
				return err
			}
			return p.ledger.Admit(ctx, tx, held.members)
		})
		var re *bulk.RefusedError
		if errors.As(err, &re) {
			jobs = p.withoutRefused(jobs, re, refused)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("admit to the bulk ledger: %w", err)
		}
		for _, j := range jobs {
			switch vec, ok := held.reused[j]; {
			case held.admitted[j]:
				j.Outcome = Batched
			case ok:
				j.vector = vec
				p.reused.Inc()
			default:
				j.Outcome = Superseded
			}
		}
		return refused, nil
	}
	return refused, nil
}

// heldJobs is how an admission sorts its jobs: the ledger's members of
// those it admits, and the vectors stored for others' texts.
type heldJobs struct {
	members  []bulk.Member
	admitted map[*Job]bool
	reused   map[*Job][]float32
}

// sortHeld locks jobs' documents and sorts the jobs: a deleted
// document's are admitted nowhere; those whose text a batch has stored
// since the pipeline looked (the documents' locks wait out a poller
// applying a batch of theirs) take its vector; the others become the
// ledger's members.
func (p *Pipeline) sortHeld(ctx context.Context, tx pgx.Tx, jobs []*Job) (heldJobs, error) {
	deleted, err := manifest.Deleted(ctx, tx, distinctDocs(jobs))
	if err != nil {
		return heldJobs{}, err
	}
	h := heldJobs{admitted: map[*Job]bool{}, reused: map[*Job][]float32{}}
	var stored map[vectorstore.TextHash][]float32
	if r, ok := p.store.(vectorstore.Reuser); ok {
		hashes := make([]vectorstore.TextHash, 0, len(jobs))
		for _, j := range jobs {
			hashes = append(hashes, j.textHash)
		}
		if stored, err = r.Reusable(ctx, tx, p.cfg.Model, hashes); err != nil {
			return heldJobs{}, fmt.Errorf("reuse stored vectors: %w", err)
		}
	}
	for _, j := range jobs {
		if deleted[j.chunk.DocID] {
			continue
		}
		if vec, ok := stored[j.textHash]; ok {
			h.reused[j] = vec
			continue
		}
		c := &j.chunk
		h.members = append(h.members, bulk.Member{Generation: p.gen, SourceID: c.SourceID, DocID: c.DocID,
			ChunkIndex: c.ChunkIndex, Version: c.DocVersion, ContentHash: c.ContentHash, Text: c.Text})
		h.admitted[j] = true
	}
	return h, nil
}

// withoutRefused moves the jobs of the members the ledger refused into
// refused, and returns the others.
func (p *Pipeline) withoutRefused(jobs []*Job, re *bulk.RefusedError, refused map[*Job]bool) []*Job {
	names := make(map[string]bool, len(re.Refused))
	for _, r := range re.Refused {
		names[r.Member.CustomID] = true
	}
	kept := jobs[:0:0]
	for _, j := range jobs {
		if names[messages.ChunkMsgID(j.chunk.DocID, j.chunk.ChunkIndex, j.chunk.DocVersion)] {
			refused[j] = true
			continue
		}
		kept = append(kept, j)
	}
	return kept
}

func (p *Pipeline) bulkKey(j *Job) bulk.Key {
	return bulk.Key{Generation: p.gen, DocID: j.chunk.DocID, ChunkIndex: j.chunk.ChunkIndex, Version: j.chunk.DocVersion}
}

// batchAttempts is how many provider batches a chunk of source may go
// through: Config.BatchAttempts for a generation in bulk mode, else the
// source's policy; 0 embeds it live.
func (p *Pipeline) batchAttempts(source string) int {
	if p.cfg.BatchAttempts > 0 {
		return p.cfg.BatchAttempts
	}
	return p.budget(source).batchAttempts
}

// Apply applies a bulk batch's results in the poller's transaction tx
// (bulk.Applier), through the live path's store and park: a vector is
// stored behind the version guard with its document's completion, a
// permanent error parks the chunk with the dead letter its class gives
// it. Each result's chunk is read back from its manifest row, which
// holds the job as it was published; a chunk no longer pending at the
// member's version (stored, parked, superseded or erased meanwhile)
// takes nothing. The documents are locked first, in key order.
func (p *Pipeline) Apply(ctx context.Context, tx pgx.Tx, results []bulk.Result) error {
	if p.gen != generation.First {
		return p.applyGeneration(ctx, tx, results)
	}
	jobs, err := p.resultJobs(ctx, tx, results)
	if err != nil || len(jobs) == 0 {
		return err
	}
	deleted, err := manifest.Deleted(ctx, tx, distinctDocs(jobs))
	if err != nil {
		return err
	}
	var toStore, toPark []*Job
	for i, j := range jobs {
		r := results[i]
		switch {
		case j == nil || deleted[j.chunk.DocID]:
		case r.Err == nil:
			j.vector = r.Vector
			toStore = append(toStore, j)
		default:
			p.fail(j, StageEmbed, r.Err)
			if j.Outcome == Parked {
				toPark = append(toPark, j)
			}
		}
	}
	if len(toStore) > 0 {
		if _, err := p.storeIn(ctx, tx, toStore); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if len(toPark) > 0 {
		slices.SortFunc(toPark, func(a, b *Job) int {
			return cmp.Or(strings.Compare(a.chunk.DocID, b.chunk.DocID), cmp.Compare(a.chunk.ChunkIndex, b.chunk.ChunkIndex))
		})
		dead, err := p.park(ctx, tx, toPark)
		if err != nil {
			return fmt.Errorf("park: %w", err)
		}
		// The poller commits tx and offers no hook after its commit, so
		// these parks are reported before it: a poller's rollback
		// leaves a count and a log line of parks it undid.
		p.reportParked(dead)
	}
	return nil
}

// resultJobs makes a job of each result's chunk from its manifest row,
// nil where the chunk is not pending at the member's version.
func (p *Pipeline) resultJobs(ctx context.Context, tx pgx.Tx, results []bulk.Result) ([]*Job, error) {
	c := manifest.MakeChunks(len(results))
	for _, r := range results {
		c.Add(r.Member.DocID, r.Member.ChunkIndex, r.Member.Version)
	}
	raws, err := manifest.PendingJobs(ctx, tx, c)
	if err != nil {
		return nil, fmt.Errorf("read the batch's jobs: %w", err)
	}
	jobs := make([]*Job, len(results))
	n := 0
	for i, raw := range raws {
		if raw == nil {
			continue
		}
		chunk, err := messages.DecodeChunkJob(raw)
		if err != nil {
			return nil, fmt.Errorf("decode the recorded job of chunk %d of %s: %w", results[i].Member.ChunkIndex, results[i].Member.DocID, err)
		}
		m := results[i].Member
		if chunk.ContentHash != m.ContentHash {
			continue
		}
		jobs[i] = &Job{Raw: raw, MsgID: m.CustomID, Delivered: 1, chunk: chunk}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	return jobs, nil
}

// Requeue hands back as owed work the members a batch did not answer
// (bulk.Requeuer), in the poller's transaction tx. A later generation's
// go back to its backfill queue. Generation 1's: each chunk still
// pending at its version moves to its next publish generation,
// unconfirmed, and the relay's sweeper publishes its job again under a
// new message id. The job comes back through the whole pipeline: the
// screen settles it if it was superseded, deleted or its run
// cancelled meanwhile, and the admission sends it to another batch
// while its source's batch attempts last, live after that.
func (p *Pipeline) Requeue(ctx context.Context, tx pgx.Tx, owed []bulk.Owed) error {
	if p.gen != generation.First {
		again := make([]generation.Owed, len(owed))
		for i, o := range owed {
			m := o.Member
			again[i] = generation.Owed{Generation: m.Generation, DocID: m.DocID, ChunkIndex: m.ChunkIndex, Version: m.Version,
				ContentHash: m.ContentHash, SourceID: m.SourceID}
		}
		return generation.Requeue(ctx, tx, again)
	}
	c := manifest.MakeChunks(len(owed))
	for _, o := range owed {
		c.Add(o.Member.DocID, o.Member.ChunkIndex, o.Member.Version)
	}
	if err := manifest.NextGeneration(ctx, tx, c, func(int, int) {}); err != nil {
		return fmt.Errorf("requeue: %w", err)
	}
	return nil
}

// applyGeneration is Apply for a later generation's batch: the vectors
// of chunks generation 1 (or the recut generation's cut) still holds at
// the member's version and content are stored, behind the generation's write lock and the documents'
// share locks as the backfill stores them; input errors park the chunks
// in the generation alone. A dropped generation takes nothing.
func (p *Pipeline) applyGeneration(ctx context.Context, tx pgx.Tx, results []bulk.Result) error {
	live, err := generation.LockForWrite(ctx, tx, p.gen)
	if err != nil || !live {
		return err
	}
	keys := make([]vectorstore.HeldKey, len(results))
	var docs []string
	for i, r := range results {
		m := r.Member
		keys[i] = vectorstore.HeldKey{DocID: m.DocID, ChunkIndex: m.ChunkIndex, Version: m.Version, ContentHash: m.ContentHash}
		docs = append(docs, m.DocID)
	}
	slices.Sort(docs)
	if err := manifest.ShareDocuments(ctx, tx, slices.Compact(docs)); err != nil {
		return fmt.Errorf("lock documents: %w", err)
	}
	held, err := p.heldTexts(ctx, tx, keys)
	if err != nil {
		return err
	}
	var toStore, toPark []*Job
	for i, r := range results {
		h, ok := held[keys[i]]
		if !ok {
			continue // changed or gone since it was owed
		}
		m := r.Member
		j := &Job{MsgID: m.CustomID, Delivered: 1, chunk: messages.ChunkJob{DocID: m.DocID, ChunkIndex: m.ChunkIndex,
			DocVersion: m.Version, ContentHash: m.ContentHash, SourceID: m.SourceID, Text: h.Text, Metadata: h.Metadata}}
		if r.Err == nil {
			j.vector = r.Vector
			toStore = append(toStore, j)
			continue
		}
		p.fail(j, StageEmbed, r.Err)
		if j.Outcome == Parked {
			toPark = append(toPark, j)
		}
	}
	if len(toStore) > 0 {
		if err := p.storeGenerationIn(ctx, tx, toStore); err != nil {
			return fmt.Errorf("store in generation %d: %w", p.gen, err)
		}
	}
	return generation.Park(ctx, tx, parkedChunks(p.gen, toPark))
}
