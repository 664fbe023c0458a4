package retention_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/failure/retention"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const day = 24 * time.Hour

// now is the fixed instant every test judges retention by.
var now = time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)

type testBundle struct {
	ctx    context.Context
	owner  *pgxpool.Pool
	reg    *prometheus.Registry
	purger *retention.Purger
	nextID int64
}

// setup builds a Purger of the dlq-replayer's steps over the policy doc
// (YAML; empty for the defaults), on a pool of the replayer role the
// service connects as, with a clock stopped at now.
func setup(t *testing.T, doc string, cfg retention.Config) *testBundle {
	t.Helper()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	runtime, err := pgxpool.New(ctx, db.RoleURL(migrations.ReplayerRole))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runtime.Close)
	flags := policy.Settings{MaxDeliveries: 5, AmbiguousRetries: 2, BackoffBase: time.Second, BackoffMax: time.Minute,
		BreakerFailures: 5, BreakerDelay: time.Second, SoftTimeLimit: time.Minute, HaltMinChunks: 1,
		PayloadRetention: policy.DefaultPayloadRetention, EscalationRetention: policy.DefaultEscalationRetention}
	table, err := policy.Parse("p.yaml", []byte(doc), flags, policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	triage := dlq.NewTriage(dlq.TriageConfig{Policy: table}, dlq.TriageDeps{Pool: runtime, Log: zerolog.Nop()})
	b := &testBundle{ctx: ctx, owner: db.Pool, reg: prometheus.NewRegistry(), nextID: 1000}
	b.purger = retention.New(cfg, retention.Deps{Log: zerolog.Nop(), Registry: b.reg, Now: clocktest.New(now).Now}, triage.RetentionSteps()...)
	return b
}

// letter is one parked chunk and what its failure left behind.
type letter struct {
	doc, source string
	escalate    bool
	// failed is how long before now the chunk last failed; resolved, when
	// set, how long before now its dead letter was resolved.
	failed, resolved time.Duration
	// triaged says the dead letter reached dead_letters; without it, it
	// is still in the outbox, unpublished.
	triaged bool
}

func (l letter) payload() []byte { return []byte(`{"doc_id":"` + l.doc + `","text":"chunk"}`) }

// seed records l: its document, its parked manifest row holding the job,
// its by-reference payload, its dead letter (whose trigger writes its
// history) or its unpublished outbox row, and for an escalation the
// secret's text.
func (b *testBundle) seed(t *testing.T, ls ...letter) {
	t.Helper()
	for _, l := range ls {
		failedAt := now.Add(-l.failed)
		exec(t, b, `INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, $2, $1, 1, 'h', 1, 'failed')`, l.doc, l.source)
		exec(t, b, `INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, job)
			VALUES ($1, 0, 1, 'h', 'parked', 1, $2)`, l.doc, l.payload())
		outboxID := b.nextID
		b.nextID++
		if !l.triaged {
			msg := testenv.DeadLetter(t, l.source, 0)
			if err := b.owner.QueryRow(b.ctx, `INSERT INTO outbox (subject, payload) VALUES ($1, $2) RETURNING id`, msg.Subject, msg.Payload).Scan(&outboxID); err != nil {
				t.Fatal(err)
			}
		}
		exec(t, b, `INSERT INTO dead_letter_payloads (outbox_id, payload, created_at) VALUES ($1, $2, $3)`, outboxID, l.payload(), failedAt)
		if l.escalate {
			exec(t, b, `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text, created_at) VALUES ($1, 0, 1, 'aws_key', 'AKIA secret', $2)`, l.doc, failedAt)
		}
		if !l.triaged {
			continue
		}
		disposition := "quarantine"
		if l.escalate {
			disposition = "escalate"
		}
		var resolvedAt *time.Time
		if l.resolved > 0 {
			at := now.Add(-l.resolved)
			resolvedAt = &at
		}
		exec(t, b, `INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, disposition,
			                          error_class, stage, attempts, payload, last_outbox_id, first_failed_at, last_failed_at, resolved_at)
			VALUES ('dl-' || $1, $1, 0, 1, $2, $1, $3, 'bad_request', 'embed', 1, $4, $5, $6, $6, $7)`,
			l.doc, l.source, disposition, l.payload(), outboxID, failedAt, resolvedAt)
	}
}

// supersededCopy adds a by-reference payload of an earlier failure of
// l's chunk, written age before now.
func (b *testBundle) supersededCopy(t *testing.T, l letter, age time.Duration) {
	t.Helper()
	exec(t, b, `INSERT INTO dead_letter_payloads (outbox_id, payload, created_at) VALUES ($1, $2, $3)`, b.nextID, l.payload(), now.Add(-age))
	b.nextID++
}

func exec(t *testing.T, b *testBundle, sql string, args ...any) {
	t.Helper()
	if _, err := b.owner.Exec(b.ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

// kept is what is left of a letter.
type kept struct {
	// payload: dead_letters still holds the payload, byte for byte.
	payload bool
	// copies counts its by-reference payloads.
	copies int
	// job: the manifest still holds the parked job.
	job bool
	// history counts its dead letter's history events.
	history int
	// text: escalated_chunks still holds the secret's text.
	text bool
}

func (b *testBundle) kept(t *testing.T, l letter) kept {
	t.Helper()
	var k kept
	var payload []byte
	err := b.owner.QueryRow(b.ctx, `
		SELECT (SELECT payload FROM dead_letters WHERE doc_id = $1),
		       (SELECT count(*) FROM dead_letter_payloads WHERE payload = $2),
		       (SELECT job IS NOT NULL FROM ingest_manifest WHERE doc_id = $1),
		       (SELECT count(*) FROM dead_letter_history WHERE dead_letter_id = 'dl-' || $1),
		       EXISTS (SELECT 1 FROM escalated_chunks WHERE doc_id = $1)`, l.doc, l.payload()).
		Scan(&payload, &k.copies, &k.job, &k.history, &k.text)
	if err != nil {
		t.Fatal(err)
	}
	k.payload = bytes.Equal(payload, l.payload())
	return k
}

func (b *testBundle) check(t *testing.T, l letter, want kept) {
	t.Helper()
	if got := b.kept(t, l); got != want {
		t.Errorf("%s: kept %+v, want %+v", l.doc, got, want)
	}
}

func (b *testBundle) purged(t *testing.T, table string) float64 {
	t.Helper()
	families, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sluice_retention_purged_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == table {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("sluice_retention_purged_total{table=%q} is not exported", table)
	return 0
}

// Everything past its bound goes, in batches smaller than what is due;
// everything within it stays; a second pass finds nothing.
func TestPassPurgesOldRowsInBatchesAndKeepsYoungOnes(t *testing.T) {
	t.Parallel()
	b := setup(t, "", retention.Config{Batch: 2})
	var old []letter
	for i := range 5 {
		old = append(old, letter{doc: fmt.Sprintf("old-%d", i), source: "src", failed: 400 * day, triaged: true})
	}
	young := []letter{
		{doc: "young-0", source: "src", failed: 10 * day, triaged: true},
		{doc: "young-1", source: "src", failed: 89 * day, triaged: true},
	}
	ancientEscalation := letter{doc: "escalated-2600d", source: "src", escalate: true, failed: 2600 * day, triaged: true}
	oldEscalation := letter{doc: "escalated-400d", source: "src", escalate: true, failed: 400 * day, triaged: true}
	b.seed(t, append(append(old, young...), ancientEscalation, oldEscalation)...)

	outcomes, err := b.purger.Pass(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]retention.Outcome{
		"dead_letters":         {Purged: 6, Batches: 4},
		"dead_letter_payloads": {Purged: 6, Batches: 4},
		"ingest_manifest":      {Purged: 6, Batches: 4},
		"dead_letter_history":  {Purged: 6, Batches: 4},
		"escalated_chunks":     {Purged: 1, Batches: 1},
	}
	for table, w := range want {
		if got := outcomes[table]; got != w {
			t.Errorf("%s: %+v, want %+v", table, got, w)
		}
		if got := b.purged(t, table); got != float64(w.Purged) {
			t.Errorf("sluice_retention_purged_total{table=%q} = %v, want %d", table, got, w.Purged)
		}
	}
	for _, l := range append(old, ancientEscalation) {
		b.check(t, l, kept{})
	}
	for _, l := range young {
		b.check(t, l, kept{payload: true, copies: 1, job: true, history: 1})
	}
	b.check(t, oldEscalation, kept{payload: true, copies: 1, job: true, history: 1, text: true})

	outcomes, err = b.purger.Pass(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for table, o := range outcomes {
		if o != (retention.Outcome{Batches: 1}) {
			t.Errorf("second pass, %s: %+v; want one empty batch", table, o)
		}
	}
}

// An open dead letter that keeps its payload keeps all a replay needs —
// its payload, its by-reference copy and its parked job — even past the
// default bound; a resolved one of the same age, a superseded copy and
// the letters of a short-lived source do not. A dead letter the relay
// still owes keeps its copy and its job whatever their age.
func TestOpenDeadLettersKeepWhatReplayNeeds(t *testing.T) {
	t.Parallel()
	b := setup(t, `
sources:
  long:
    retention: {dead_letter_payloads: 180d}
  short:
    retention: {dead_letter_payloads: 7d}
`, retention.Config{})
	open := letter{doc: "long-open", source: "long", failed: 100 * day, triaged: true}
	resolved := letter{doc: "long-resolved", source: "long", failed: 100 * day, resolved: 99 * day, triaged: true}
	short := letter{doc: "short-open", source: "short", failed: 8 * day, triaged: true}
	owed := letter{doc: "in-outbox", source: "src", failed: 100 * day}
	b.seed(t, open, resolved, short, owed)
	b.supersededCopy(t, open, 120*day)

	if _, err := b.purger.Pass(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.check(t, open, kept{payload: true, copies: 1, job: true, history: 1})
	b.check(t, resolved, kept{payload: true, history: 2})
	b.check(t, short, kept{history: 1})
	b.check(t, owed, kept{copies: 1, job: true})
}

// Escalated text goes once older than ESCALATION_RETENTION (the policy's
// default, here raised above the mandate, or a source's own) and not a
// day sooner; so do the escalation's payload and history.
func TestEscalatedTextGoesAfterEscalationRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, `
default:
  retention: {escalations: 2600d}
sources:
  archive:
    retention: {escalations: 3000d}
`, retention.Config{Batch: 1})
	gone := letter{doc: "escalated-2601d", source: "src", escalate: true, failed: 2601 * day, triaged: true}
	within := letter{doc: "escalated-2599d", source: "src", escalate: true, failed: 2599 * day, triaged: true}
	archived := letter{doc: "archive-2601d", source: "archive", escalate: true, failed: 2601 * day, triaged: true}
	b.seed(t, gone, within, archived)

	outcomes, err := b.purger.Pass(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomes["escalated_chunks"]; o.Purged != 1 {
		t.Errorf("escalated_chunks: %+v, want 1 purged", o)
	}
	b.check(t, gone, kept{})
	b.check(t, within, kept{payload: true, copies: 1, job: true, history: 1, text: true})
	b.check(t, archived, kept{payload: true, copies: 1, job: true, history: 1, text: true})
}

// The purger runs its first pass as soon as it starts, with no one
// asking, and stops when its context ends.
func TestRunPurgesWithoutBeingAsked(t *testing.T) {
	t.Parallel()
	b := setup(t, "", retention.Config{})
	old := letter{doc: "old", source: "src", failed: 400 * day, triaged: true}
	b.seed(t, old)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.purger.Run(ctx)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for b.kept(t, old) != (kept{}) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: kept %+v, want everything purged", b.kept(t, old))
		}
		select {
		case <-done:
			t.Fatal("Run returned before its context ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
}

// A parked file's kept bytes go with its dead letter's payload, and a
// content goes once no dead letter refers to it: the bytes two files
// share stay while the younger one keeps them.
func TestKeptFileBytesGoWhenNoDeadLetterNeedsThem(t *testing.T) {
	t.Parallel()
	b := setup(t, "", retention.Config{})
	oldShared := letter{doc: "old-shared", source: "src", failed: 400 * day, triaged: true}
	youngShared := letter{doc: "young-shared", source: "src", failed: day, triaged: true}
	oldAlone := letter{doc: "old-alone", source: "src", failed: 400 * day, triaged: true}
	b.seed(t, oldShared, youngShared, oldAlone)
	shared, alone := []byte("%PDF-1.7 shared"), []byte("%PDF-1.7 alone")
	keep := func(l letter, data []byte) string {
		sum := sha256.Sum256(data)
		ref := deadletter.FileRef{DeadLetterID: "dl-" + l.doc, DocID: l.doc, SHA256: hex.EncodeToString(sum[:])}
		if err := deadletter.KeepFile(b.ctx, b.owner, ref, data); err != nil {
			t.Fatal(err)
		}
		return ref.SHA256
	}
	sharedSum := keep(oldShared, shared)
	keep(youngShared, shared)
	aloneSum := keep(oldAlone, alone)
	if n := b.count(t, `SELECT count(*) FROM file_bytes`); n != 2 {
		t.Fatalf("three parked files of two contents keep %d contents, want 2", n)
	}
	if _, err := b.purger.Pass(b.ctx); err != nil {
		t.Fatal(err)
	}
	for sum, want := range map[string]int{sharedSum: 1, aloneSum: 0} {
		if n := b.count(t, `SELECT count(*) FROM file_bytes WHERE sha256 = '`+sum+`'`); n != want {
			t.Errorf("content %s: %d rows after the pass, want %d", sum[:8], n, want)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM file_bytes_refs`); n != 1 {
		t.Errorf("%d references left, want the young dead letter's only", n)
	}
	if got := b.purged(t, "file_bytes"); got != 1 {
		t.Errorf("sluice_retention_purged_total{table=file_bytes} = %v, want 1", got)
	}
}

func (b *testBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := b.owner.QueryRow(b.ctx, sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
