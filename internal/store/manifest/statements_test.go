package manifest_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// long ago is the updated_at of a seeded row: a statement that moves the
// row sets it to now().
var longAgo = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{ctx: context.Background(), pool: testenv.NewDatabase(t).Pool}
}

// seed records document docID at version 2 with one chunk in status st,
// holding its job and last touched long ago.
func (b *testBundle) seed(t *testing.T, docID string, st manifest.Status) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ($1, 's', $1, 2, 'h', 1, $2)`, docID, manifest.DocProcessing); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, job, updated_at)
		VALUES ($1, 0, 2, 'h', $2, 1, '\x7b7d', $3)`, docID, st, longAgo); err != nil {
		t.Fatal(err)
	}
}

// row reads the chunk's status and whether a statement touched it.
func (b *testBundle) row(t *testing.T, docID string) (manifest.Status, bool) {
	t.Helper()
	var st manifest.Status
	var touched bool
	if err := b.pool.QueryRow(b.ctx, `SELECT status, updated_at <> $2 FROM ingest_manifest WHERE doc_id = $1`,
		docID, longAgo).Scan(&st, &touched); err != nil {
		t.Fatal(err)
	}
	return st, touched
}

// Each status-changing statement moves a chunk from exactly the statuses
// its guard names, each such move is one CanMove allows, and every move
// CanMove allows is made by some statement: the Go table and the SQL
// guards agree.
func TestStatementsAgreeWithCanMove(t *testing.T) {
	t.Parallel()
	b := setup(t)
	statements := []struct {
		name string
		from []manifest.Status
		to   manifest.Status
		run  func(docID string) error
	}{
		{"MarkStored", []manifest.Status{manifest.Pending, manifest.Parked}, manifest.Stored, func(id string) error {
			return manifest.MarkStored(b.ctx, b.pool, chunks(id), []int32{1}, nil)
		}},
		{"Park", []manifest.Status{manifest.Pending, manifest.Parked}, manifest.Parked, func(id string) error {
			_, err := manifest.Park(b.ctx, b.pool, []manifest.Failure{{DocID: id, Version: 2, Attempts: 1, Class: "timeout", ReplayGen: 1}})
			return err
		}},
		{"SupersedePending", []manifest.Status{manifest.Pending}, manifest.Superseded, func(id string) error {
			return manifest.SupersedePending(b.ctx, b.pool, chunks(id))
		}},
		{"SupersedeBeyond", []manifest.Status{manifest.Pending, manifest.Stored, manifest.Parked}, manifest.Superseded, func(id string) error {
			return manifest.SupersedeBeyond(b.ctx, b.pool, []string{id}, []int64{3}, []int32{0})
		}},
		{"Reopen", []manifest.Status{manifest.Stored, manifest.Parked}, manifest.Pending, func(id string) error {
			_, err := manifest.Reopen(b.ctx, b.pool, chunks(id))
			return err
		}},
	}
	made := map[[2]manifest.Status]bool{}
	for _, from := range manifest.Statuses {
		for _, s := range statements {
			docID := fmt.Sprintf("%s-%s", from, s.name)
			b.seed(t, docID, from)
			if err := s.run(docID); err != nil {
				t.Fatalf("%s on a %s chunk: %v", s.name, from, err)
			}
			got, moved := b.row(t, docID)
			guarded := slices.Contains(s.from, from)
			want := from
			if guarded {
				want = s.to
				made[[2]manifest.Status{from, s.to}] = true
			}
			if moved != guarded || got != want {
				t.Errorf("%s on a %s chunk: now %s (moved %v), want %s", s.name, from, got, moved, want)
			}
			if guarded && !manifest.CanMove(from, s.to) {
				t.Errorf("%s moves a chunk from %s to %s, which CanMove forbids", s.name, from, s.to)
			}
		}
	}
	for _, from := range manifest.Statuses {
		for _, to := range manifest.Statuses {
			if manifest.CanMove(from, to) && !made[[2]manifest.Status{from, to}] {
				t.Errorf("CanMove(%s, %s) is true, but no statement makes that move", from, to)
			}
		}
	}
}

// Marking a superseded chunk stored changes nothing: not its status, its
// attempts, nor the job it still holds.
func TestMarkStoredLeavesASupersededChunkAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, "d", manifest.Superseded)
	c := manifest.MakeChunks(1)
	c.Add("d", 0, 2)
	if err := manifest.MarkStored(b.ctx, b.pool, c, []int32{7}, nil); err != nil {
		t.Fatal(err)
	}
	var st manifest.Status
	var attempts int
	var hasJob, touched bool
	if err := b.pool.QueryRow(b.ctx, `SELECT status, attempts, job IS NOT NULL, updated_at <> $1 FROM ingest_manifest WHERE doc_id = 'd'`,
		longAgo).Scan(&st, &attempts, &hasJob, &touched); err != nil {
		t.Fatal(err)
	}
	if st != manifest.Superseded || attempts != 1 || !hasJob || touched {
		t.Errorf("superseded chunk after MarkStored: %s, %d attempts, job kept %v, touched %v; want unchanged", st, attempts, hasJob, touched)
	}
}

// The constants are exactly the statuses the schema's CHECK constraints
// allow.
func TestStatusesMatchTheSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	quoted := regexp.MustCompile(`'(\w+)'::text`)
	allowed := func(constraint string) []string {
		var def string
		if err := b.pool.QueryRow(b.ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1`, constraint).Scan(&def); err != nil {
			t.Fatalf("%s: %v", constraint, err)
		}
		var out []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	var chunks, docs []string
	for _, s := range manifest.Statuses {
		chunks = append(chunks, string(s))
	}
	for _, s := range manifest.DocStatuses {
		docs = append(docs, string(s))
	}
	slices.Sort(chunks)
	slices.Sort(docs)
	if got := allowed("ingest_manifest_status_check"); !slices.Equal(got, chunks) {
		t.Errorf("ingest_manifest allows %v, the package declares %v", got, chunks)
	}
	if got := allowed("documents_status_check"); !slices.Equal(got, docs) {
		t.Errorf("documents allows %v, the package declares %v", got, docs)
	}
}

// A chunk's publish is confirmed once, by whichever comes first: its
// PubAck, which leaves a Stored chunk alone, or its store. A stored
// chunk's published_at is always its delivered message's stream
// timestamp, even when a held PubAck was recorded first: the PubAck's
// recording time is later than when JetStream had the job.
func TestAChunkIsConfirmedByItsPubAckOrItsStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	published := func(docID string) (at *time.Time, seq *int64) {
		t.Helper()
		if err := b.pool.QueryRow(b.ctx, `SELECT published_at, publish_seq FROM ingest_manifest WHERE doc_id = $1`,
			docID).Scan(&at, &seq); err != nil {
			t.Fatal(err)
		}
		return at, seq
	}
	delivered := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

	// Stored first: the store records the message's time, and the late
	// PubAck changes nothing.
	b.seed(t, "stored-first", manifest.Pending)
	if err := manifest.MarkStored(b.ctx, b.pool, chunks("stored-first"), []int32{1}, []time.Time{delivered}); err != nil {
		t.Fatal(err)
	}
	if err := manifest.ConfirmPublished(b.ctx, b.pool, chunks("stored-first"), []int64{41}); err != nil {
		t.Fatal(err)
	}
	if at, seq := published("stored-first"); at == nil || !at.Equal(delivered) || seq != nil {
		t.Errorf("stored before its PubAck: published_at %v, publish_seq recorded %v; want %v and none", at, seq != nil, delivered)
	}

	// Confirmed first: the PubAck's sequence is kept, its time replaced
	// by the message's.
	b.seed(t, "confirmed-first", manifest.Pending)
	if err := manifest.ConfirmPublished(b.ctx, b.pool, chunks("confirmed-first"), []int64{42}); err != nil {
		t.Fatal(err)
	}
	if err := manifest.MarkStored(b.ctx, b.pool, chunks("confirmed-first"), []int32{1}, []time.Time{delivered}); err != nil {
		t.Fatal(err)
	}
	if at, seq := published("confirmed-first"); at == nil || !at.Equal(delivered) || seq == nil || *seq != 42 {
		t.Errorf("stored after its PubAck: published_at %v, publish_seq %v; want the message's %v and 42", at, deref(seq), delivered)
	}

	// Stored without a message time (unknown): a recorded PubAck stays.
	b.seed(t, "unknown-time", manifest.Pending)
	if err := manifest.ConfirmPublished(b.ctx, b.pool, chunks("unknown-time"), []int64{44}); err != nil {
		t.Fatal(err)
	}
	confirmed, _ := published("unknown-time")
	if err := manifest.MarkStored(b.ctx, b.pool, chunks("unknown-time"), []int32{1}, []time.Time{{}}); err != nil {
		t.Fatal(err)
	}
	if at, _ := published("unknown-time"); at == nil || confirmed == nil || !at.Equal(*confirmed) {
		t.Errorf("stored without a message time after its PubAck: published_at %v; want the PubAck's %v", at, confirmed)
	}

	// A parked chunk is still confirmed by its PubAck: a replay may
	// republish it, and the sweeper judges by confirmation.
	b.seed(t, "parked", manifest.Parked)
	if err := manifest.ConfirmPublished(b.ctx, b.pool, chunks("parked"), []int64{43}); err != nil {
		t.Fatal(err)
	}
	if at, seq := published("parked"); at == nil || seq == nil || *seq != 43 {
		t.Errorf("parked chunk after its PubAck: published_at %v, publish_seq %v; want recorded, 43", at, deref(seq))
	}
}

// deref is *p, or -1 for nil.
func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
