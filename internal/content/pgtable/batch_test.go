package pgtable_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/pgtable"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// appDB is an application database holding an articles table.
func appDB(t *testing.T) (*pgxpool.Pool, pgtable.Config) {
	t.Helper()
	db := testenv.NewDatabase(t)
	exec(t, db.Pool, `CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text, lang text, published boolean NOT NULL DEFAULT true)`)
	return db.Pool, pgtable.Config{Source: "articles", Table: "public.articles", ID: "id", Text: []string{"title", "body"}, Meta: []string{"lang"}, Filter: "published"}
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// drain opens a batch, walks it, acknowledges it, and returns what it
// yielded: native id to text, "-" for a tombstone.
func drain(t *testing.T, pool *pgxpool.Pool, cfg pgtable.Config) (map[string]string, bool) {
	t.Helper()
	ctx := context.Background()
	b, err := pgtable.Open(ctx, pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := b.Walk(ctx, func(d corpus.Document) error {
		if d.Status == corpus.StatusDeleted {
			got[d.NativeID] = "-"
		} else {
			got[d.NativeID] = d.Text
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	return got, b.Reload()
}

func pending(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	n, err := pgtable.Pending(context.Background(), pool, "articles")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The first drain is a snapshot of the rows the filter takes; then each
// insert, update, delete and primary-key change is drained once as the
// row now is, or a tombstone; a row leaving the filter is a tombstone;
// an aborted transaction queues nothing; TRUNCATE is a reload of the
// empty table.
func TestTriggersQueueEveryCommittedChange(t *testing.T) {
	t.Parallel()
	pool, cfg := appDB(t)
	ctx := context.Background()
	exec(t, pool, `INSERT INTO articles VALUES (1, 'one', 'first body', 'en', true), (2, 'two', 'second', 'fr', true), (3, 'draft', 'x', 'en', false)`)
	if err := pgtable.Install(ctx, pool, cfg); err != nil {
		t.Fatal(err)
	}
	if err := pgtable.Install(ctx, pool, cfg); err != nil {
		t.Fatalf("installing again: %v", err)
	}
	got, reload := drain(t, pool, cfg)
	if !reload || len(got) != 2 || got["1"] != "one\n\nfirst body" || got["2"] != "two\n\nsecond" {
		t.Fatalf("first drain = %v (reload %v); want the two published rows as a reload", got, reload)
	}

	exec(t, pool, `INSERT INTO articles VALUES (4, 'four', 'new', 'en', true)`)
	exec(t, pool, `UPDATE articles SET body = 'edited' WHERE id = 1`)
	exec(t, pool, `DELETE FROM articles WHERE id = 2`)
	exec(t, pool, `UPDATE articles SET id = 40 WHERE id = 4`)
	exec(t, pool, `UPDATE articles SET published = true WHERE id = 3`)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO articles VALUES (5, 'aborted', 'never', 'en', true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM articles WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	got, reload = drain(t, pool, cfg)
	want := map[string]string{"1": "one\n\nedited", "2": "-", "4": "-", "40": "four\n\nnew", "3": "draft\n\nx"}
	if reload || !mapsEqual(got, want) {
		t.Fatalf("drain = %v (reload %v); want %v", got, reload, want)
	}
	if n := pending(t, pool); n != 0 {
		t.Fatalf("%d changes still queued after the drain", n)
	}
	exec(t, pool, `UPDATE articles SET published = false WHERE id = 3`)
	if got, _ := drain(t, pool, cfg); !mapsEqual(got, map[string]string{"3": "-"}) {
		t.Fatalf("a row leaving the filter drained as %v; want a tombstone", got)
	}

	exec(t, pool, `TRUNCATE articles`)
	got, reload = drain(t, pool, cfg)
	if !reload || len(got) != 0 {
		t.Fatalf("after TRUNCATE: %v (reload %v); want an empty reload", got, reload)
	}
}

// A burst of updates to the same rows drains as one document per row.
func TestBurstOfUpdatesCoalesces(t *testing.T) {
	t.Parallel()
	pool, cfg := appDB(t)
	ctx := context.Background()
	if err := pgtable.Install(ctx, pool, cfg); err != nil {
		t.Fatal(err)
	}
	drain(t, pool, cfg)
	exec(t, pool, `INSERT INTO articles SELECT i, 'title', 'v0', 'en', true FROM generate_series(1, 10) i`)
	exec(t, pool, `DO $$ BEGIN FOR v IN 1..10000 LOOP UPDATE articles SET body = 'v' || v; END LOOP; END $$`)
	if n := pending(t, pool); n != 100010 {
		t.Fatalf("%d changes queued, want 100010", n)
	}
	b, err := pgtable.Open(ctx, pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	if err := b.Walk(ctx, func(d corpus.Document) error {
		if d.Text != "title\n\nv10000" {
			return errors.New("row " + d.NativeID + " drained as " + d.Text + ", not its last version")
		}
		docs = append(docs, d.NativeID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 10 || b.Changes() != 100010 {
		t.Fatalf("%d documents from %d changes; want 10 from 100010", len(docs), b.Changes())
	}
}

// A change committed after a drain's snapshot stays queued through that
// drain's acknowledgement and is drained next, after it; a batch closed
// without acknowledgement leaves the queue as it was.
func TestChangesAfterTheSnapshotComeNext(t *testing.T) {
	t.Parallel()
	pool, cfg := appDB(t)
	ctx := context.Background()
	exec(t, pool, `INSERT INTO articles VALUES (1, 'one', 'v1', 'en', true)`)
	if err := pgtable.Install(ctx, pool, cfg); err != nil {
		t.Fatal(err)
	}
	b, err := pgtable.Open(ctx, pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	if err := b.Walk(ctx, func(d corpus.Document) error {
		exec(t, pool, `UPDATE articles SET body = 'v2' WHERE id = 1`) // committed after the snapshot
		first = append(first, d.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first, []string{"one\n\nv1"}) {
		t.Fatalf("snapshot yielded %v, want the row as it was", first)
	}
	b, err = pgtable.Open(ctx, pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Close(ctx)
	if got, _ := drain(t, pool, cfg); !mapsEqual(got, map[string]string{"1": "one\n\nv2"}) {
		t.Fatalf("next drain = %v; want the change made during the snapshot", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A change committed after Listen and before Wait, as one committed while
// a follower drains, wakes the Wait at once; so does a TRUNCATE.
func TestAChangeAfterListenWakesTheNextWait(t *testing.T) {
	t.Parallel()
	pool, cfg := appDB(t)
	ctx := context.Background()
	if err := pgtable.Install(ctx, pool, cfg); err != nil {
		t.Fatal(err)
	}
	l := pgtable.NewListener(pool.Config().ConnString(), cfg.Source)
	defer l.Close()
	for _, change := range []string{`INSERT INTO articles VALUES (1, 'one', 'body', 'en', true)`, `TRUNCATE articles`} {
		if err := l.Listen(ctx); err != nil {
			t.Fatal(err)
		}
		exec(t, pool, change)
		start := time.Now()
		if err := l.Wait(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited > 20*time.Second {
			t.Fatalf("%s: the wait returned after %s, not at the notification", change, waited)
		}
	}
}
