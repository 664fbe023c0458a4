package replay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is a database of dead letters and a private NATS.
type testBundle struct {
	db     *testenv.Database
	js     jetstream.JetStream
	outbox int
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{db: testenv.NewDatabase(t)}
	// The topology owner declares the streams, as `sluice nats setup` does.
	_, b.js = testenv.NewJetStream(t, broker.Topology{})
	return b
}

// letter is one dead letter to seed.
type letter struct {
	id, disposition string
	gen             int
	// replayedAgo marks it replayed that long ago; failedAgo is its last
	// failure. Zero replayedAgo means never replayed.
	replayedAgo, failedAgo time.Duration
}

func (b *testBundle) seed(t *testing.T, source string, letters ...letter) {
	t.Helper()
	batch := &pgx.Batch{}
	now := time.Now().UTC()
	for _, l := range letters {
		b.outbox++
		native := l.id + ".txt"
		text := "text of " + l.id
		hash, err := messages.ContentHash(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID(source, native), DocVersion: 1, ChunkCount: 1,
			SourceID: source, SourceNativeID: native, RunID: "run-" + source, ContentHash: hash, Text: text, PublishedAt: now}
		payload, err := job.Encode()
		if err != nil {
			t.Fatal(err)
		}
		var replayed *time.Time
		if l.replayedAgo > 0 {
			at := now.Add(-l.replayedAgo)
			replayed = &at
		}
		batch.Queue(`
			INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id,
			    disposition, error_class, stage, attempts, replay_gen, payload, last_outbox_id, first_failed_at, last_failed_at, replayed_at)
			VALUES ($1, $2, 0, 1, $3, $4, $5, 'bad_request', 'embed', 1, $6, $7, $8, $9, $9, $10)`,
			l.id, job.DocID, source, native, l.disposition, l.gen, payload, b.outbox, now.Add(-l.failedAgo), replayed)
	}
	if err := b.db.Pool.SendBatch(context.Background(), batch).Close(); err != nil {
		t.Fatal(err)
	}
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

const q = messages.DispositionQuarantine

// A replay takes dead letters never replayed; those that failed again
// after a replay only with IncludeReplayed; in-flight ones and
// escalations never.
func TestReplayExcludesReplayedAndEscalated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, "s",
		letter{id: "fresh-1", disposition: q, failedAgo: 5 * time.Minute},
		letter{id: "fresh-2", disposition: q, failedAgo: 4 * time.Minute},
		// Replayed by an operator, failed again since.
		letter{id: "again-op", disposition: q, gen: 1, replayedAgo: 3 * time.Minute, failedAgo: 2 * time.Minute},
		// Replayed by the automatic replayer, failed again (no operator mark).
		letter{id: "again-auto", disposition: messages.DispositionRetry, gen: 2, failedAgo: 2 * time.Minute},
		// Dispatched and not failed since: in flight.
		letter{id: "inflight", disposition: q, replayedAgo: time.Minute, failedAgo: 2 * time.Minute},
		letter{id: "escalated", disposition: messages.DispositionEscalate, failedAgo: time.Minute},
		// A quarantine whose chunk's text is held as an escalation.
		letter{id: "secret-held", disposition: q, failedAgo: time.Minute},
	)
	b.exec(t, `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ($1, 0, 1, 'pan', 'x')`,
		messages.DocID("s", "secret-held.txt"))

	scope := replay.Scope{Filter: deadletter.Filter{Source: "s"}, Limit: 100}
	p, err := replay.DryRun(ctx, b.db.Pool, scope, "cli:tester")
	if err != nil {
		t.Fatal(err)
	}
	if p.Selected != 2 || p.ExcludedReplayed != 2 || p.ExcludedEscalated != 2 {
		t.Errorf("default dry run: selected %d, excluded replayed %d, escalations %d; want 2, 2, 2",
			p.Selected, p.ExcludedReplayed, p.ExcludedEscalated)
	}
	scope.IncludeReplayed = true
	if p, err = replay.DryRun(ctx, b.db.Pool, scope, "cli:tester"); err != nil || p.Selected != 4 || p.ExcludedReplayed != 0 {
		t.Errorf("dry run with IncludeReplayed: %+v, %v; want 4 selected", p, err)
	}
	for _, s := range []replay.Scope{
		{Filter: deadletter.Filter{Source: "s", Disposition: messages.DispositionEscalate}, Limit: 10},
		{Filter: deadletter.Filter{Source: "s", Disposition: messages.DispositionEscalate}, Limit: 10, IncludeReplayed: true},
	} {
		if _, err := replay.Execute(ctx, b.db.Pool, b.js, s, "try", "cli:tester"); !errors.Is(err, replay.ErrScope) {
			t.Errorf("replaying escalations: %v; want ErrScope", err)
		}
	}

	scope.IncludeReplayed = false
	p, err = replay.Execute(ctx, b.db.Pool, b.js, scope, "first", "cli:tester")
	if err != nil || p.Dispatched != 2 {
		t.Fatalf("execute: %+v, %v; want 2 dispatched", p, err)
	}
	scope.IncludeReplayed = true
	p, err = replay.Execute(ctx, b.db.Pool, b.js, scope, "second", "cli:tester")
	if err != nil || p.Dispatched != 2 {
		t.Fatalf("execute with IncludeReplayed: %+v, %v; want the 2 that failed again", p, err)
	}
	var marked []string
	rows, _ := b.db.Pool.Query(ctx, `SELECT dead_letter_id FROM dead_letters WHERE replay_id IS NOT NULL AND replayed_at > now() - interval '1 minute' ORDER BY 1`)
	marked, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || fmt.Sprint(marked) != "[again-auto again-op fresh-1 fresh-2]" {
		t.Errorf("marked %v (%v); want the fresh and failed-again ones, never the escalations or the in-flight one", marked, err)
	}
}

// Dry runs are audited with who asked; a replay's audit entry shows its
// outcomes as its dead letters resolve or fail again.
func TestAuditRecordsDryRunsAndOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, "a",
		letter{id: "a1", disposition: q, failedAgo: 3 * time.Minute},
		letter{id: "a2", disposition: q, failedAgo: 2 * time.Minute},
		letter{id: "a3", disposition: q, failedAgo: time.Minute})
	scope := replay.Scope{Filter: deadletter.Filter{Source: "a"}, Limit: 10}
	dry, err := replay.DryRun(ctx, b.db.Pool, scope, "console:alice")
	if err != nil {
		t.Fatal(err)
	}
	p, err := replay.Execute(ctx, b.db.Pool, b.js, scope, "provider fixed", "cli:bob")
	if err != nil || p.Dispatched != 3 {
		t.Fatalf("execute: %+v, %v", p, err)
	}
	// a1 is stored; a2 fails again in the replayed generation; a3 is still
	// in flight.
	b.exec(t, `UPDATE dead_letters SET resolved_at = now() WHERE dead_letter_id = 'a1'`)
	b.exec(t, `UPDATE dead_letters SET replay_gen = 1, last_outbox_id = 100, last_failed_at = now(), attempts = attempts + 1
		WHERE dead_letter_id = 'a2'`)

	all, err := replay.ListAudit(ctx, b.db.Pool, replay.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ReplayID != p.ReplayID || all[1].ReplayID != dry.ReplayID {
		t.Fatalf("audit %+v; want the replay, then the dry run", all)
	}
	r, d := all[0], all[1]
	if d.Action != replay.ActionDryRun || !d.DryRun || d.RequestedBy != "console:alice" || d.Selected != 3 || d.Reason != "" || d.Dispatched != 0 {
		t.Errorf("dry run entry %+v; want dry_run by console:alice selecting 3", d)
	}
	if r.Action != replay.ActionReplay || r.RequestedBy != "cli:bob" || r.Reason != "provider fixed" ||
		r.Dispatched != 3 || r.Stored != 1 || r.ParkedAgain != 1 || r.InFlight != 1 {
		t.Errorf("replay entry %+v; want by cli:bob, 3 dispatched: 1 stored, 1 parked again, 1 in flight", r)
	}
	dryOnly, err := replay.ListAudit(ctx, b.db.Pool, replay.AuditFilter{Action: replay.ActionDryRun})
	if err != nil || len(dryOnly) != 1 || dryOnly[0].ReplayID != dry.ReplayID {
		t.Errorf("action filter: %+v, %v", dryOnly, err)
	}
	byBob, err := replay.ListAudit(ctx, b.db.Pool, replay.AuditFilter{RequestedBy: "cli:bob"})
	if err != nil || len(byBob) != 1 || byBob[0].ReplayID != p.ReplayID {
		t.Errorf("principal filter: %+v, %v", byBob, err)
	}
	if _, err := replay.ListAudit(ctx, b.db.Pool, replay.AuditFilter{Action: "delete"}); !errors.Is(err, replay.ErrScope) {
		t.Errorf("unknown action: %v; want ErrScope", err)
	}
}

// A rate-limited replay publishes no faster than its rate.
func TestReplayRate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var letters []letter
	for i := range 11 {
		letters = append(letters, letter{id: fmt.Sprintf("r%02d", i), disposition: q, failedAgo: time.Minute})
	}
	b.seed(t, "r", letters...)
	start := time.Now()
	p, err := replay.Execute(context.Background(), b.db.Pool, b.js,
		replay.Scope{Filter: deadletter.Filter{Source: "r"}, Limit: 100, RatePerSecond: 20}, "slowly", "cli:tester")
	if err != nil || p.Dispatched != 11 {
		t.Fatalf("execute: %+v, %v", p, err)
	}
	// Eleven jobs at 20/s: ten gaps of 50ms at least.
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Errorf("11 jobs at 20/s took %s; want at least 500ms", took)
	}
}
