package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Report is what a reconciliation found, and with Redrive what it
// repaired.
type Report struct {
	Chunks map[string]int `json:"chunks_by_status"`
	Leaked Leaks          `json:"leaked"`
	// Duplicated counts chunks search would serve twice: a served row in
	// both chunk_embeddings and chunk_embeddings_previous. (Each table's
	// primary key already rules out two rows of a chunk in one table.)
	Duplicated int `json:"duplicated"`
	// Unpublished are pending chunks recorded more than the grace ago
	// whose publish JetStream never confirmed.
	Unpublished int `json:"unpublished"`
	// Lost are pending chunks whose confirmed message is no longer in
	// INGEST (the stream was lost, purged or recreated).
	Lost int `json:"lost"`
	// Stranded are messages in INGEST that no durable will deliver again.
	Stranded int `json:"stranded"`
	// OpenDeadLetters are stored chunks whose dead letter is unresolved.
	OpenDeadLetters int `json:"stored_with_open_dead_letter"`
	// Unerased are deleted documents of which PostgreSQL still holds
	// something (a vector, chunk text, job bytes, a payload, an open
	// dead letter): an erasure interrupted or written back. --redrive
	// erases them again.
	Unerased []erase.Leak `json:"deleted_with_data,omitempty"`
	// Generations report every index generation: its status, its vectors
	// and the deleted documents it still holds vectors of.
	Generations []GenerationReport `json:"generations"`
	// NotOneActive says what is wrong when not exactly one generation is
	// active; empty when one is.
	NotOneActive string `json:"not_one_active,omitempty"`
	// Active is the active generation's progress: the chunks of current
	// documents it owes a vector of, or that are parked. Absent when not
	// exactly one generation is active.
	Active *generation.Progress `json:"active,omitempty"`
	// ActiveOwes says what is wrong when the active generation is a later
	// one that owes chunks: search misses them. Generation 1's owed
	// chunks are the pipeline's pending work, not a problem; empty
	// otherwise.
	ActiveOwes string `json:"active_owes,omitempty"`
	// BackfillStranded lists the later generations that owe chunks
	// stored more than StrandedAfter ago while their backfill has
	// nothing queued, nothing in flight and no pass under way: nothing
	// would bring the chunks there (invariant 11). --redrive starts
	// another pass.
	BackfillStranded []int `json:"backfill_stranded,omitempty"`
	// BulkStranded counts chunk jobs still pending in bulk batches the
	// ledger settled: nothing will answer them. The ledger hands every
	// member of a batch on as it settles it, so this is a defect, not a
	// state; it has no repair.
	BulkStranded int `json:"bulk_stranded,omitempty"`
	// BulkOrphanFiles are request files Sluice uploaded that the
	// provider still holds and no bulk batch uses (an upload its builder
	// never recorded, a refused file that could not be deleted): each
	// holds chunk text. Looked for only with Config.Provider; --redrive
	// deletes them.
	BulkOrphanFiles []string `json:"bulk_orphan_files,omitempty"`
	// UnaccountedRuns are runs that ended completed with files their
	// walks met and did not read, park or exclude (runs.Unaccounted): a
	// file dropped without a word. A defect, not a state; it has no
	// repair but running the producer on the source again.
	UnaccountedRuns []string `json:"runs_with_files_unaccounted,omitempty"`
	// StaleTextClaims counts the claims on texts older than
	// StaleClaimAge (invariant 13): a pipeline releases its claims when
	// its batch ends, and sweeps those of dead processes once past their
	// time to live, so a claim this old means no pipeline has run since
	// its claimer died. They hold nothing back; --redrive deletes them.
	StaleTextClaims int64 `json:"stale_text_claims,omitempty"`
	// Budgets are the fleet budgets' members; Overdrawn says which
	// budgets' members spend more than the budget (invariant 12).
	Budgets   []fleetbudget.Summary `json:"budgets,omitempty"`
	Overdrawn []string              `json:"overdrawn_budgets,omitempty"`
	// Redriven counts the repairs made, by problem.
	Redriven map[string]int `json:"redriven,omitempty"`
	// Failures are repairs that did not succeed.
	Failures []string `json:"failures,omitempty"`
	OK       bool     `json:"ok"`
}

// Leaks are chunks the system lost track of.
type Leaks struct {
	// StoredWithoutVector are manifest rows marked stored with no vector
	// of their version.
	StoredWithoutVector int `json:"stored_without_vector"`
	// ParkedWithoutDeadLetter are manifest rows marked parked with neither
	// a dead_letters row nor an outbox row.
	ParkedWithoutDeadLetter int `json:"parked_without_dead_letter"`
	// NeedReingest are the StoredWithoutVector rows whose job was cleared
	// when they were stored (retention): their text went with the vector,
	// so only the source can send them again. A repair forgets their
	// documents' content hash, so the producer's next run over the source
	// ingests those documents again as a new version.
	NeedReingest int `json:"need_reingest"`
}

// Total is the number of leaked chunks.
func (l Leaks) Total() int { return l.StoredWithoutVector + l.ParkedWithoutDeadLetter }

// Problems is the number of problems found.
func (r *Report) Problems() int {
	n := r.Leaked.Total() + r.Duplicated + r.Unpublished + r.Lost + r.Stranded + r.OpenDeadLetters + len(r.Unerased) + len(r.Overdrawn) +
		len(r.BackfillStranded) + r.BulkStranded + int(r.StaleTextClaims) + len(r.BulkOrphanFiles) +
		len(r.UnaccountedRuns)
	if r.NotOneActive != "" {
		n++
	}
	if r.ActiveOwes != "" {
		n++
	}
	return n
}

// Named lists the problems found, by name and count.
func (r *Report) Named() []string {
	var out []string
	for _, p := range []struct {
		name string
		n    int
	}{
		{"stored without vector", r.Leaked.StoredWithoutVector},
		{"parked without dead letter", r.Leaked.ParkedWithoutDeadLetter},
		{"duplicated", r.Duplicated},
		{"unpublished", r.Unpublished},
		{"lost from INGEST", r.Lost},
		{"stranded in INGEST", r.Stranded},
		{"stored with an open dead letter", r.OpenDeadLetters},
		{"deleted documents with data left", len(r.Unerased)},
		{"pending in settled bulk batches", r.BulkStranded},
		{"bulk request files no batch uses at the provider", len(r.BulkOrphanFiles)},
		{"text claims older than " + StaleClaimAge.String(), int(r.StaleTextClaims)},
		{"completed runs with files unaccounted for", len(r.UnaccountedRuns)},
	} {
		if p.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if r.NotOneActive != "" {
		out = append(out, r.NotOneActive)
	}
	if r.ActiveOwes != "" {
		out = append(out, r.ActiveOwes)
	}
	for _, l := range r.Unerased {
		out = append(out, "deleted document "+l.String())
	}
	for _, g := range r.BackfillStranded {
		out = append(out, fmt.Sprintf("generation %d owes stored chunks that nothing queues or carries", g))
	}
	out = append(out, r.Overdrawn...)
	if len(r.Failures) > 0 {
		out = append(out, fmt.Sprintf("%d failed repairs", len(r.Failures)))
	}
	return out
}

// Config tune a reconciliation.
type Config struct {
	// Grace is how long a recorded chunk may wait for its producer's
	// publish before it counts as unpublished. Defaults to
	// publish.DefaultGrace.
	Grace time.Duration
	// Redrive repairs what is found.
	Redrive bool
	// Log receives a line per repair. Defaults to a no-op logger.
	Log zerolog.Logger
	// Provider is the Batch API, to compare its files with the bulk
	// ledger. Defaults to nil: the provider is not looked at.
	Provider *batchapi.Client
}

// Run checks the invariants and, with Redrive, repairs what it found.
func Run(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, opts Config) (*Report, error) {
	if opts.Grace == 0 {
		opts.Grace = publish.DefaultGrace
	}
	c := &checker{pool: pool, js: js, opts: opts, pub: publish.NewPublisher(pool, js, publish.PublisherConfig{}),
		rep: &Report{Chunks: map[string]int{}, Redriven: map[string]int{}}}
	for _, step := range []func(context.Context) error{
		c.countChunks, c.leaks, c.openDeadLetters, c.stranded, c.unpublished, c.lost, c.unerased, c.generations, c.budgets, c.bulk, c.textClaims, c.files,
	} {
		if err := step(ctx); err != nil {
			return c.rep, err
		}
	}
	// A duplicate, a wrong number of active generations, an active
	// generation that owes chunks, an overdrawn budget, a member
	// stranded in a settled bulk batch or a run with files unaccounted
	// for cannot be repaired by re-driving; every other problem is
	// repaired unless a repair failed.
	c.rep.OK = c.rep.Problems() == 0 || (opts.Redrive && len(c.rep.Failures) == 0 && c.rep.Duplicated == 0 && c.rep.NotOneActive == "" &&
		c.rep.ActiveOwes == "" && len(c.rep.Overdrawn) == 0 && c.rep.BulkStranded == 0 && len(c.rep.UnaccountedRuns) == 0)
	return c.rep, nil
}

// files lists the completed runs whose files do not add up.
func (c *checker) files(ctx context.Context) error {
	ids, err := runs.Unaccounted(ctx, c.pool)
	c.rep.UnaccountedRuns = ids
	return err
}

type checker struct {
	pool *pgxpool.Pool
	js   jetstream.JetStream
	opts Config
	pub  *publish.Publisher
	rep  *Report
}

// StaleClaimAge is the age past which a claim on a text is stale: far
// beyond any pipeline's time to live (pipeline.DefaultClaimTTL, 15s) and
// its sweep each minute.
const StaleClaimAge = time.Hour

// textClaims counts the stale claims on texts and, with Redrive, deletes
// them.
func (c *checker) textClaims(ctx context.Context) error {
	n, err := vectorstore.CountTextClaims(ctx, c.pool, StaleClaimAge)
	if err != nil {
		return err
	}
	c.rep.StaleTextClaims = n
	if !c.opts.Redrive || n == 0 {
		return nil
	}
	deleted, err := vectorstore.DeleteTextClaims(ctx, c.pool, StaleClaimAge)
	if err != nil {
		c.fail("delete stale text claims", err)
		return nil
	}
	c.rep.Redriven["stale text claims"] = int(deleted)
	return nil
}

// bulk counts the chunk jobs stranded in settled bulk batches.
func (c *checker) bulk(ctx context.Context) error {
	n, err := bulk.Stranded(ctx, c.pool)
	c.rep.BulkStranded = n
	if err != nil || c.opts.Provider == nil {
		return err
	}
	orphans, err := bulk.Orphans(ctx, c.pool, c.opts.Provider)
	if err != nil {
		return err
	}
	for _, f := range orphans {
		c.rep.BulkOrphanFiles = append(c.rep.BulkOrphanFiles, f.ID+" ("+f.Filename+")")
	}
	if !c.opts.Redrive || len(orphans) == 0 {
		return nil
	}
	deleted, err := bulk.DeleteOrphans(ctx, c.opts.Provider, orphans)
	if err != nil {
		c.fail("delete bulk request files no batch uses", err)
	}
	if deleted > 0 {
		c.rep.Redriven["bulk_orphan_files"] = deleted
		c.opts.Log.Warn().Int("files", deleted).Msg("deleted bulk request files no batch uses")
	}
	return nil
}

// unerased finds deleted documents with data left and, with Redrive,
// finishes their erasure.
func (c *checker) unerased(ctx context.Context) error {
	leaks, err := erase.Check(ctx, c.pool)
	if err != nil {
		return err
	}
	c.rep.Unerased = leaks
	if !c.opts.Redrive || len(leaks) == 0 {
		return nil
	}
	ids := make([]string, len(leaks))
	for i, l := range leaks {
		ids[i] = l.DocID
		c.opts.Log.Warn().Str("doc_id", l.DocID).Str("left", l.String()).Msg("finishing the erasure of a deleted document")
	}
	n, err := erase.Redrive(ctx, c.pool, "reconcile", ids)
	if err != nil {
		c.fail("finish erasures", err)
		return nil
	}
	c.rep.Redriven["deleted documents with data left"] = n
	return nil
}

// GenerationReport is what reconcile found of one index generation.
type GenerationReport struct {
	Generation int               `json:"generation"`
	Status     generation.Status `json:"status"`
	// Vectors are the generation's rows, stale versions included.
	Vectors int64 `json:"vectors"`
	// DeletedWithVectors are the deleted documents the generation still
	// holds vectors of (before any --redrive); each is in Unerased too.
	DeletedWithVectors int `json:"deleted_with_vectors"`
	// Progress is the generation's against the manifest; absent for a
	// dropped one.
	Progress *generation.Progress `json:"progress,omitempty"`
}

// StrandedAfter is how long a chunk must have been stored before a
// later generation that lacks it, with nothing queued or in flight for
// any generation, counts as stranded there: longer than any store
// transaction, so that a chunk whose queue row is not committed yet is
// never counted.
const StrandedAfter = 5 * time.Minute

// generations checks that exactly one generation is active and reports
// each generation, counting from the erasure check the deleted documents
// it still holds vectors of, and measures the active generation: a later
// generation that owes chunks serves without them.
func (c *checker) generations(ctx context.Context) error {
	var err error
	if c.rep.NotOneActive, err = generation.Check(ctx, c.pool); err != nil {
		return err
	}
	gs, err := generation.List(ctx, c.pool)
	if err != nil {
		return err
	}
	vectors, err := vectorstore.GenerationVectors(ctx, c.pool)
	if err != nil {
		return err
	}
	c.rep.Generations = make([]GenerationReport, len(gs))
	for i, g := range gs {
		key := erase.GenerationLeakPrefix + strconv.Itoa(g.ID)
		if g.ID == generation.First {
			key = "chunk_embeddings"
		}
		r := GenerationReport{Generation: g.ID, Status: g.Status, Vectors: vectors[g.ID]}
		for _, l := range c.rep.Unerased {
			if l.Where[key] > 0 {
				r.DeletedWithVectors++
			}
		}
		if g.Status != generation.Dropped {
			p, err := generation.ProgressOf(ctx, c.pool, g)
			if err != nil {
				return err
			}
			r.Progress = &p
		}
		c.rep.Generations[i] = r
	}
	if err := c.backfillStranded(ctx, gs); err != nil {
		return err
	}
	if c.rep.NotOneActive != "" {
		return nil
	}
	for _, g := range gs {
		if g.Status != generation.Active {
			continue
		}
		p, err := generation.ProgressOf(ctx, c.pool, g)
		if err != nil {
			return err
		}
		c.rep.Active = &p
		if g.ID != generation.First && (p.Owed > 0 || p.Uncut > 0) {
			c.rep.ActiveOwes = fmt.Sprintf("active generation %d owes %d chunks and %d documents not cut yet (backfill %s): search misses them; "+
				"roll back with sluice index activate 1, or wait for its backfill and run the sources of the documents not cut", g.ID, p.Owed, p.Uncut, p.Backfill)
		}
	}
	return nil
}

// backfillStranded finds the later generations that owe chunks stored
// StrandedAfter ago or earlier while their backfill carries nothing (no
// chunk queued, in flight or in a bulk batch):
// the queue is looked at before the backfill durable, so that a chunk
// moving from one to the other is seen in one of them.
func (c *checker) backfillStranded(ctx context.Context, gs []generation.Generation) error {
	before := time.Now().Add(-StrandedAfter)
	queued, err := generation.Backlog(ctx, c.pool)
	if err != nil {
		return err
	}
	inFlight, err := c.durableOutstanding(ctx, broker.BackfillConsumer)
	if err != nil {
		return err
	}
	batched, err := bulk.PendingLater(ctx, c.pool)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.ID == generation.First || g.Status == generation.Dropped || queued[g.ID] > 0 || inFlight > 0 || batched[g.ID] > 0 {
			continue
		}
		st, err := generation.StateOf(ctx, c.pool, g.ID)
		if err != nil {
			return err
		}
		if st.Pass > 0 && !st.Scanned {
			continue
		}
		owes, err := generation.OwesStored(ctx, c.pool, g.ID, before)
		if err != nil {
			return err
		}
		if !owes {
			continue
		}
		c.rep.BackfillStranded = append(c.rep.BackfillStranded, g.ID)
		if !c.opts.Redrive {
			continue
		}
		if err := generation.NewPass(ctx, c.pool, g.ID); err != nil {
			c.fail(fmt.Sprintf("start another pass of generation %d", g.ID), err)
			continue
		}
		c.rep.Redriven["generations whose backfill stranded chunks"]++
	}
	return nil
}

func (c *checker) fail(what string, err error) {
	c.rep.Failures = append(c.rep.Failures, fmt.Sprintf("%s: %v", what, err))
}

func (c *checker) countChunks(ctx context.Context) error {
	rows, err := c.pool.Query(ctx, `SELECT status, count(*) FROM ingest_manifest GROUP BY status`)
	if err != nil {
		return fmt.Errorf("count chunks: %w", err)
	}
	var status string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { c.rep.Chunks[status] = n; return nil }); err != nil {
		return fmt.Errorf("count chunks: %w", err)
	}
	c.rep.Duplicated, err = vectorstore.CountServedTwice(ctx, c.pool)
	return err
}

// leakedSQL selects leaked manifest rows: stored without a vector of
// their version, or parked with neither a dead letter nor an outbox row.
const leakedSQL = `
	SELECT m.doc_id, m.chunk_index, m.status, m.job IS NULL FROM ingest_manifest m
	WHERE (m.status = ` + manifest.SQLStored + ` AND NOT EXISTS (
	         SELECT 1 FROM chunk_embeddings e WHERE e.doc_id = m.doc_id AND e.chunk_index = m.chunk_index AND e.version >= m.version))
	   OR (m.status = ` + manifest.SQLParked + `
	       AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.doc_id = m.doc_id AND d.chunk_index = m.chunk_index)
	       AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'doc_id' = m.doc_id
	                       AND (o.payload->>'chunk_index')::int = m.chunk_index))`

// leaks counts leaked rows; a repair sends each back through the pipeline
// as pending work, which stores or parks it properly this time, or, for
// a stored row whose job was cleared, marks its document for the
// producer's next run.
func (c *checker) leaks(ctx context.Context) error {
	rows, err := c.pool.Query(ctx, leakedSQL)
	if err != nil {
		return fmt.Errorf("leak query: %w", err)
	}
	var jobs []publish.Job
	var reingest []string
	var j publish.Job
	var index int32
	var status manifest.Status
	var cleared bool
	if _, err := pgx.ForEachRow(rows, []any{&j.DocID, &index, &status, &cleared}, func() error {
		switch {
		case status != manifest.Stored:
			c.rep.Leaked.ParkedWithoutDeadLetter++
		case cleared:
			c.rep.Leaked.StoredWithoutVector++
			c.rep.Leaked.NeedReingest++
			reingest = append(reingest, j.DocID)
			return nil
		default:
			c.rep.Leaked.StoredWithoutVector++
		}
		j.Index = int(index)
		jobs = append(jobs, j)
		return nil
	}); err != nil {
		return fmt.Errorf("leak query: %w", err)
	}
	if !c.opts.Redrive {
		return nil
	}
	c.markForReingest(ctx, reingest)
	if len(jobs) == 0 {
		return nil
	}
	ids, indexes := keys(jobs)
	reopened, err := manifest.Reopen(ctx, c.pool, manifest.Chunks{DocIDs: ids, Indexes: indexes})
	if err != nil {
		c.fail("re-open leaked chunks", err)
		return nil
	}
	c.rep.Redriven["leaked"] = int(reopened)
	// Re-opened rows are now unpublished work, which the next step
	// publishes under their new generation.
	return nil
}

// markForReingest forgets the content hash of documents whose stored
// chunks lost their vector after their job was cleared: the producer
// compares hashes, so its next run over the source sends them again as a
// new version.
func (c *checker) markForReingest(ctx context.Context, docIDs []string) {
	if len(docIDs) == 0 {
		return
	}
	n, err := manifest.ForgetHashes(ctx, c.pool, docIDs)
	if err != nil {
		c.fail("mark documents for re-ingestion", err)
		return
	}
	c.rep.Redriven["marked_for_reingest"] = int(n)
}

// openDeadLetters counts stored chunks whose dead letter is still open; a
// repair resolves them, as the store transaction would have.
func (c *checker) openDeadLetters(ctx context.Context) error {
	const where = `FROM dead_letters d JOIN ingest_manifest m ON m.doc_id = d.doc_id AND m.chunk_index = d.chunk_index
		WHERE m.status = ` + manifest.SQLStored + ` AND d.version <= m.version AND d.resolved_at IS NULL`
	if err := c.pool.QueryRow(ctx, `SELECT count(*) `+where).Scan(&c.rep.OpenDeadLetters); err != nil {
		return fmt.Errorf("open dead letters: %w", err)
	}
	if !c.opts.Redrive || c.rep.OpenDeadLetters == 0 {
		return nil
	}
	open, err := c.storedWithOpenDeadLetter(ctx, where)
	if err != nil {
		c.fail("resolve open dead letters", err)
		return nil
	}
	n, err := deadletter.Resolve(ctx, c.pool, open, manifest.Stored)
	if err != nil {
		c.fail("resolve open dead letters", err)
		return nil
	}
	c.rep.Redriven["stored_with_open_dead_letter"] = int(n)
	return nil
}

// storedWithOpenDeadLetter returns the stored chunks, at their stored
// version, that where (a FROM clause over dead_letters d and
// ingest_manifest m) finds with an open dead letter.
func (c *checker) storedWithOpenDeadLetter(ctx context.Context, where string) (manifest.Chunks, error) {
	rows, err := c.pool.Query(ctx, `SELECT m.doc_id, m.chunk_index, m.version `+where)
	if err != nil {
		return manifest.Chunks{}, err
	}
	var open manifest.Chunks
	var docID string
	var index int
	var version int64
	_, err = pgx.ForEachRow(rows, []any{&docID, &index, &version}, func() error {
		open.Add(docID, index, version)
		return nil
	})
	return open, err
}

// unpublished counts pending chunks never confirmed; a repair publishes
// them through the same verified path as the relay's sweeper.
func (c *checker) unpublished(ctx context.Context) error {
	err := c.pool.QueryRow(ctx, `
		SELECT count(*) FROM ingest_manifest
		WHERE status = `+manifest.SQLPending+` AND published_at IS NULL AND updated_at < now() - make_interval(secs => $1)`,
		c.opts.Grace.Seconds()).Scan(&c.rep.Unpublished)
	if err != nil {
		return fmt.Errorf("unpublished chunks: %w", err)
	}
	reopened := c.rep.Redriven["leaked"]
	c.rep.Unpublished -= reopened
	if !c.opts.Redrive || c.rep.Unpublished+reopened == 0 {
		return nil
	}
	sweeper, err := publish.NewSweeper(publish.SweeperConfig{Grace: c.opts.Grace}, publish.SweeperDeps{Pool: c.pool, JS: c.js, Log: c.opts.Log})
	if err != nil {
		return err
	}
	// No grace here: re-opened rows are owed now, and in the quiet system
	// reconcile expects a publish racing a producer is only deduplicated.
	res, err := sweeper.Sweep(ctx, "", 0)
	if err != nil {
		c.fail("publish unpublished chunks", err)
	}
	if len(res.Failed) > 0 {
		c.fail("publish unpublished chunks", fmt.Errorf("%d not confirmed: %w", len(res.Failed), res.Err))
	}
	c.rep.Redriven["unpublished"] = max(res.Confirmed-reopened, 0)
	return nil
}

func keys(jobs []publish.Job) ([]string, []int32) {
	ids, indexes := make([]string, len(jobs)), make([]int32, len(jobs))
	for i, j := range jobs {
		ids[i], indexes[i] = j.DocID, int32(j.Index)
	}
	return ids, indexes
}
