package manifest_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// deadLetter gives docID's chunk 0 a dead letter of version; purged
// says retention took its payload, resolved that it is resolved.
func (b *testBundle) deadLetter(t *testing.T, docID string, version int64, purged, resolved bool) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `
		INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, disposition,
		                          error_class, stage, attempts, payload, last_outbox_id, first_failed_at, last_failed_at,
		                          payload_purged_at, resolved_at)
		VALUES ('dl-' || $1, $1, 0, $2, 's', $1, 'quarantine', 'bad_request', 'embed', 1,
		        CASE WHEN $3::bool THEN NULL ELSE '\x7b7d'::bytea END, 1, $5::timestamptz, $5::timestamptz,
		        CASE WHEN $3 THEN $5::timestamptz END, CASE WHEN $4 THEN $5::timestamptz END)`,
		docID, version, purged, resolved, longAgo); err != nil {
		t.Fatal(err)
	}
}

func (b *testBundle) hasJob(t *testing.T, docID string) bool {
	t.Helper()
	var has bool
	if err := b.pool.QueryRow(b.ctx, `SELECT job IS NOT NULL FROM ingest_manifest WHERE doc_id = $1`, docID).Scan(&has); err != nil {
		t.Fatal(err)
	}
	return has
}

// A parked chunk's job goes once its dead letter has lost its payload or
// been resolved, in batches; a chunk still owed (pending), one whose dead
// letter keeps its payload, is of an older version or is not triaged
// yet keeps it, and no status moves.
func TestClearParkedJobsKeepsWhatIsStillNeeded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		doc      string
		status   manifest.Status
		letter   bool
		version  int64
		purged   bool
		resolved bool
		keep     bool
	}{
		{"purged-1", manifest.Parked, true, 2, true, false, false},
		{"purged-2", manifest.Parked, true, 2, true, false, false},
		{"resolved", manifest.Parked, true, 2, false, true, false},
		{"open", manifest.Parked, true, 2, false, false, true},
		{"older-letter", manifest.Parked, true, 1, true, false, true},
		{"in-outbox", manifest.Parked, false, 0, false, false, true},
		{"pending", manifest.Pending, true, 2, true, true, true},
	}
	for _, c := range cases {
		b.seed(t, c.doc, c.status)
		if c.letter {
			b.deadLetter(t, c.doc, c.version, c.purged, c.resolved)
		}
	}
	var total int64
	batches := 0
	for {
		n, err := manifest.ClearParkedJobs(b.ctx, b.pool, 2)
		if err != nil {
			t.Fatal(err)
		}
		total, batches = total+n, batches+1
		if n < 2 {
			break
		}
	}
	if total != 3 || batches != 2 {
		t.Errorf("cleared %d jobs in %d batches; want 3 in 2", total, batches)
	}
	for _, c := range cases {
		if got := b.hasJob(t, c.doc); got != c.keep {
			t.Errorf("%s: job kept = %v, want %v", c.doc, got, c.keep)
		}
		if st, touched := b.row(t, c.doc); st != c.status || touched {
			t.Errorf("%s: status %s (touched %v), want %s untouched", c.doc, st, touched, c.status)
		}
	}
	// The schema agrees: a parked chunk may lose its job, a pending one
	// never.
	if _, err := b.pool.Exec(b.ctx, `UPDATE ingest_manifest SET job = NULL WHERE doc_id = 'pending'`); err == nil {
		t.Error("a pending chunk's job was cleared: the schema must refuse it")
	}
}

// Escalated text goes past its document's source's escalation retention,
// the default's for other sources and for a document that is gone, and
// not a day sooner.
func TestPurgeEscalatedTextFollowsEachSourcesRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	day := 24 * time.Hour
	now := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	keep := policy.Bounds{Sources: []string{"archive"}, Seconds: []float64{(3000 * day).Seconds()}, Default: (2555 * day).Seconds()}
	for _, doc := range []struct{ id, source string }{{"d-default", "s"}, {"d-archive", "archive"}} {
		if _, err := b.pool.Exec(b.ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, $2, $1, 1, 'h', 3, 'failed')`, doc.id, doc.source); err != nil {
			t.Fatal(err)
		}
	}
	rows := []struct {
		doc   string
		index int
		age   time.Duration
		kept  bool
	}{
		{"d-default", 0, 2556 * day, false},
		{"d-default", 1, 2554 * day, true},
		{"d-archive", 0, 2556 * day, true},
		{"d-archive", 1, 3001 * day, false},
		{"d-gone", 0, 2556 * day, false},
	}
	for _, r := range rows {
		if _, err := b.pool.Exec(b.ctx, `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text, created_at) VALUES ($1, $2, 1, 'aws_key', 'AKIA secret', $3)`,
			r.doc, r.index, now.Add(-r.age)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := manifest.PurgeEscalatedText(b.ctx, b.pool, keep, now, 10)
	if err != nil || n != 3 {
		t.Fatalf("purged %d, err %v; want 3", n, err)
	}
	for _, r := range rows {
		var kept bool
		if err := b.pool.QueryRow(b.ctx, `SELECT EXISTS (SELECT 1 FROM escalated_chunks WHERE doc_id = $1 AND chunk_index = $2)`, r.doc, r.index).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if kept != r.kept {
			t.Errorf("%s/%d, %s old: kept = %v, want %v", r.doc, r.index, r.age, kept, r.kept)
		}
	}
}
