package chaos_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// quiet reports whether nothing is left to do: no chunk pending, no
// outbox row unpublished, nothing queued for a later index generation,
// every parked chunk triaged, INGEST empty.
func (f *fleet) quiet() bool {
	pending, ok := f.tryCount(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`)
	if !ok || pending > 0 {
		return false
	}
	unpublished, ok := f.tryCount(`SELECT count(*) FROM outbox WHERE published_at IS NULL`)
	if !ok || unpublished > 0 {
		return false
	}
	queued, ok := f.tryCount(`SELECT count(*) FROM generation_backfill_queue`)
	if !ok || queued > 0 {
		return false
	}
	unsettled, ok := f.tryCount(`SELECT count(*) FROM bulk_batches WHERE state NOT IN ('applied', 'requeued') AND requests > 0`)
	if !ok || unsettled > 0 {
		return false
	}
	untriaged, ok := f.tryCount(`
		SELECT count(*) FROM ingest_manifest m WHERE m.status = 'parked' AND NOT EXISTS (
			SELECT 1 FROM dead_letters d WHERE d.doc_id = m.doc_id AND d.chunk_index = m.chunk_index)`)
	if !ok || untriaged > 0 {
		return false
	}
	return f.ingestMessages() == 0
}

// runsEnded reports whether no run is left running: a run whose producer
// finished has completed (or failed, halted, was cancelled), and one
// whose producer was killed has been interrupted.
func (f *fleet) runsEnded() bool {
	running, ok := f.tryCount(`SELECT count(*) FROM ingest_runs WHERE status = 'running'`)
	return ok && running == 0
}

// runsEndWithin bounds the wait for runsEnded once the system is quiet:
// the dlq-replayer's housekeeping settles a finished run within a second
// or two, a killed producer's run once its heartbeat is older than the
// producer's timeout, which the fleet leaves at its default.
const runsEndWithin = runs.DefaultHeartbeatTimeout + 30*time.Second

// verdict is what a converged system holds.
type verdict struct {
	documents, stored, parked, lost, duplicated, wrongVectors int
	// deleted are the documents deleted when the system converged;
	// unerased, the rows of theirs still holding data.
	deleted, unerased int
}

// converge waits, with no operator action, until the system is quiet,
// then checks every invariant: each of the wantDocs documents recorded,
// every chunk stored once with the embedder's vector for its own text or
// parked with an open dead letter, no run left running, and `sluice
// reconcile` exiting 0.
func (f *fleet) converge(timeout time.Duration, wantDocs int) verdict {
	f.t.Helper()
	start := time.Now()
	f.eventually(timeout, "the system to converge (nothing pending, outbox drained, INGEST empty)", f.quiet)
	f.t.Logf("converged %s after the faults", time.Since(start).Round(100*time.Millisecond))
	if !localenv.Poll(runsEndWithin, f.runsEnded) {
		f.t.Errorf("runs left running %s after the system was quiet (a killed producer's run must end interrupted): %s", runsEndWithin, f.openRuns())
	}
	v := verdict{
		documents: f.count(`SELECT count(*) FROM documents`),
		stored:    f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`),
		parked:    f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked'`),
		lost: f.count(`
			SELECT count(*) FROM ingest_manifest m
			WHERE NOT (m.status = 'superseded'
			   OR (m.status = 'stored' AND EXISTS (SELECT 1 FROM chunk_embeddings e
			        WHERE e.doc_id = m.doc_id AND e.chunk_index = m.chunk_index AND e.version = m.version AND e.content_hash = m.content_hash))
			   OR (m.status = 'parked' AND EXISTS (SELECT 1 FROM dead_letters d
			        WHERE d.doc_id = m.doc_id AND d.chunk_index = m.chunk_index AND d.resolved_at IS NULL)))`),
		duplicated: f.count(`SELECT count(*) FROM (SELECT 1 FROM chunk_embeddings GROUP BY doc_id, chunk_index HAVING count(*) > 1) d`),
	}
	v.wrongVectors = f.wrongVectors()
	v.deleted = f.count(`SELECT count(*) FROM documents WHERE status = 'deleted'`)
	v.unerased = f.count(unerasedSQL)
	if v.unerased != 0 {
		f.t.Errorf("after convergence: %d rows of deleted documents still hold a vector, chunk text, job bytes or a payload", v.unerased)
	}
	if wantDocs >= 0 && v.documents != wantDocs {
		f.t.Errorf("%d documents recorded, want %d", v.documents, wantDocs)
	}
	if v.lost != 0 || v.duplicated != 0 || v.wrongVectors != 0 {
		f.t.Errorf("after convergence: %d lost, %d duplicated, %d stored vectors not the embedder's for their text", v.lost, v.duplicated, v.wrongVectors)
	}
	// Invariant 11: every later generation not dropped holds a vector of
	// every stored chunk at its version, or has parked it; a backfill
	// pass may still be under way when the rest is quiet.
	if !localenv.Poll(2*time.Minute, func() bool { n, ok := f.tryCount(laterOwedSQL); return ok && n == 0 }) {
		f.t.Errorf("later index generations still owe %d stored chunks 2m after the system was quiet", f.count(laterOwedSQL))
	}
	if n := f.wrongLaterVectors(); n != 0 {
		f.t.Errorf("%d vectors of later generations are not the embedder's for their text at their generation's size", n)
	}
	// Invariant 13: a pipeline releases its claims on texts when their
	// batch ends, so once the backfill too is quiet only a process that
	// died holds a claim.
	if !localenv.Poll(2*time.Minute, func() bool { return len(f.claimsOfRunningProcesses()) == 0 }) {
		f.t.Errorf("running processes still hold claims on texts 2m after the system was quiet: %v", f.claimsOfRunningProcesses())
	}
	// The bulk ledger: every member it admitted ended applied, parked or
	// requeued, and kept no text.
	if n := f.count(`SELECT count(*) FROM bulk_members WHERE state = 'pending' OR text <> ''`); n != 0 {
		f.t.Errorf("after convergence: %d bulk members pending or keeping their text", n)
	}
	if code, out := f.sluice("reconcile"); code != 0 {
		f.t.Errorf("sluice reconcile exited %d:\n%s", code, out)
	}
	// Invariant 12: members recompute their shares on their own beats,
	// so a budget may be overdrawn for one heartbeat, never longer.
	if !localenv.Poll(2*fleetbudget.DefaultHeartbeat, f.budgetsWithin) {
		f.t.Errorf("a fleet budget's members' shares add up to more than the budget %s after the system was quiet", 2*fleetbudget.DefaultHeartbeat)
	}
	return v
}

// claimsOfRunningProcesses returns the claimers of text_claims
// (host:pid:random) whose pid is a service of the fleet still running.
func (f *fleet) claimsOfRunningProcesses() []string {
	f.t.Helper()
	running := map[string]bool{}
	f.mu.Lock()
	for _, p := range f.procs {
		if p.running() {
			running[strconv.Itoa(p.Pid())] = true
		}
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := f.db.Pool.Query(ctx, `SELECT DISTINCT claimed_by FROM text_claims`)
	if err != nil {
		return []string{err.Error()}
	}
	claimers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return []string{err.Error()}
	}
	var held []string
	for _, c := range claimers {
		if parts := strings.Split(c, ":"); len(parts) != 3 || running[parts[1]] {
			held = append(held, c)
		}
	}
	return held
}

// unerasedSQL counts what PostgreSQL still holds of deleted documents,
// table by table, written here apart from the code under test: a
// vector or chunk text (a recut generation's cut text too), a retained
// previous row, job bytes, escalated text, a dead letter's payload, a payload kept by reference (by its
// document, or by the outbox rows of the document's dead letters), or an
// outbox row's.
const unerasedSQL = `
WITH gone AS (SELECT doc_id FROM documents WHERE status = 'deleted')
SELECT (SELECT count(*) FROM chunk_embeddings WHERE doc_id IN (SELECT doc_id FROM gone))
     + (SELECT count(*) FROM chunk_embeddings_previous WHERE doc_id IN (SELECT doc_id FROM gone))
     + (SELECT count(*) FROM ingest_manifest WHERE doc_id IN (SELECT doc_id FROM gone) AND job IS NOT NULL)
     + (SELECT count(*) FROM escalated_chunks WHERE doc_id IN (SELECT doc_id FROM gone))
     + (SELECT count(*) FROM dead_letters WHERE doc_id IN (SELECT doc_id FROM gone) AND length(coalesce(payload, '')) > 0)
     + (SELECT count(*) FROM dead_letter_payloads p WHERE p.doc_id IN (SELECT doc_id FROM gone)
           OR p.outbox_id IN (SELECT d.last_outbox_id FROM dead_letters d WHERE d.doc_id IN (SELECT doc_id FROM gone)))
     + (SELECT count(*) FROM outbox o WHERE o.payload->>'doc_id' IN (SELECT doc_id FROM gone) AND coalesce(o.payload->>'payload', '') <> '')
     + (SELECT count(*) FROM generation_embeddings WHERE doc_id IN (SELECT doc_id FROM gone))
     + (SELECT count(*) FROM bulk_members WHERE doc_id IN (SELECT doc_id FROM gone) AND text <> '')
     + (SELECT count(*) FROM generation_chunks WHERE doc_id IN (SELECT doc_id FROM gone))`

// laterOwedSQL counts, over every later index generation not dropped,
// the chunks it should hold at their document's current version that it
// has no vector of at that version and content and has not parked: the
// chunks stored in generation 1, or for a recut generation the chunks
// the sources' runs cut for it that are not withheld. A recut
// generation's documents not cut yet are counted apart, by the chunking
// change's test.
const laterOwedSQL = `
WITH should AS (
	SELECT g.generation, m.doc_id, m.chunk_index, m.version, m.content_hash
	FROM index_generations g
	JOIN ingest_manifest m ON m.status = 'stored'
	JOIN documents d ON d.doc_id = m.doc_id AND d.version = m.version AND d.status <> 'deleted'
	WHERE g.generation > 1 AND g.status <> 'dropped' AND NOT g.recut
	UNION ALL
	SELECT g.generation, c.doc_id, c.chunk_index, c.version, c.content_hash
	FROM index_generations g
	JOIN generation_chunks c ON c.generation = g.generation AND NOT c.withheld
	JOIN documents d ON d.doc_id = c.doc_id AND d.version = c.version AND d.status <> 'deleted'
	WHERE g.status <> 'dropped' AND g.recut)
SELECT count(*)
FROM should s
WHERE NOT EXISTS (SELECT 1 FROM generation_embeddings v WHERE v.generation = s.generation AND v.doc_id = s.doc_id
                  AND v.chunk_index = s.chunk_index AND v.version = s.version AND v.content_hash = s.content_hash)
  AND NOT EXISTS (SELECT 1 FROM generation_parked p WHERE p.generation = s.generation AND p.doc_id = s.doc_id
                  AND p.chunk_index = s.chunk_index AND p.version = s.version AND p.content_hash = s.content_hash
                  AND p.released_at IS NULL)`

// randomDocument picks a document not deleted, at random, and returns
// its source and doc id; false while PostgreSQL does not answer or none
// is recorded.
func (f *fleet) randomDocument() (source, docID string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := f.db.Pool.QueryRow(ctx, `
		SELECT source_id, doc_id FROM documents WHERE status <> 'deleted' ORDER BY random() LIMIT 1`).Scan(&source, &docID)
	return source, docID, err == nil
}

// openRuns lists the runs still running, for a failure's message.
func (f *fleet) openRuns() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := f.db.Pool.Query(ctx, `
		SELECT run_id || ' (source ' || source_id || ', ' || coalesce('heartbeat ' || to_char(now() - heartbeat_at, 'HH24:MI:SS') || ' ago', 'no heartbeat')
		       || ', publish ' || CASE WHEN publish_finished_at IS NULL THEN 'unfinished' ELSE 'finished' END || ')'
		FROM ingest_runs WHERE status = 'running' ORDER BY started_at`)
	if err != nil {
		return err.Error()
	}
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err.Error()
	}
	return strings.Join(open, ", ")
}

// wrongLaterVectors counts the vectors of later generations that differ
// from embed-sim's deterministic vector for the chunk's text at the
// generation's dimension.
func (f *fleet) wrongLaterVectors() int {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := f.db.Pool.Query(ctx, `SELECT text, embedding::real[] FROM generation_embeddings`)
	if err != nil {
		f.t.Fatal(err)
	}
	wrong := 0
	var text string
	var got []float32
	if _, err := pgx.ForEachRow(rows, []any{&text, &got}, func() error {
		want := make([]float32, len(got))
		embedsim.EmbedInto(want, text)
		for i := range want {
			if math.Abs(float64(want[i]-got[i])) > 1e-5 {
				wrong++
				break
			}
		}
		return nil
	}); err != nil {
		f.t.Fatal(err)
	}
	return wrong
}

// wrongVectors counts stored vectors that differ from embed-sim's
// deterministic vector for the chunk's text.
func (f *fleet) wrongVectors() int {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := vectorstore.Open(ctx, f.db.Pool, f.opts.dims)
	if err != nil {
		f.t.Fatal(err)
	}
	query := `SELECT text, embedding FROM chunk_embeddings`
	if store.Mode() == vectorstore.ModeVector {
		query = `SELECT text, embedding::real[] FROM chunk_embeddings`
	}
	rows, err := f.db.Pool.Query(ctx, query)
	if err != nil {
		f.t.Fatal(err)
	}
	wrong := 0
	want := make([]float32, f.opts.dims)
	var text string
	var got []float32
	if _, err := pgx.ForEachRow(rows, []any{&text, &got}, func() error {
		embedsim.EmbedInto(want, text)
		for i := range want {
			if math.Abs(float64(want[i]-got[i])) > 1e-5 {
				wrong++
				f.t.Logf("wrong vector for text %q", strings.TrimSpace(text[:min(40, len(text))]))
				break
			}
		}
		return nil
	}); err != nil {
		f.t.Fatal(err)
	}
	return wrong
}

// budgetsWithin reports whether every fleet budget's live members'
// shares add up to at most the budget (invariant 12), summed here from
// the bucket's entries apart from reconcile's check.
func (f *fleet) budgetsWithin() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fleet, err := fleetbudget.Read(ctx, f.js, "")
	if err != nil {
		f.t.Logf("read the fleet budget: %v", err)
		return false
	}
	for key, entries := range fleet {
		sum := 0.0
		for _, e := range entries {
			sum += e.Share
		}
		if sum > 1+1e-6 {
			f.t.Logf("fleet budget %s: %d members' shares add up to %.3f", key, len(entries), sum)
			return false
		}
	}
	return true
}
