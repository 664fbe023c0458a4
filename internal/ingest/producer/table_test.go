package producer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/store/sources"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

// tableBundle is an interruptBundle with an application database holding
// the articles table, declared as the table source "articles".
type tableBundle struct {
	*interruptBundle
	app *testenv.Database
}

func newTableBundle(t *testing.T, opts ...testenv.DBOption) *tableBundle {
	t.Helper()
	b := &tableBundle{interruptBundle: newInterruptBundle(t), app: testenv.NewDatabase(t, opts...)}
	b.appExec(`CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text, lang text)`)
	err := sources.Add(context.Background(), b.db.RolePool(t, migrations.OperatorRole), "articles", sources.KindTable,
		sources.Table{DSN: "env:APP_DSN", Table: "public.articles", ID: "id", Text: []string{"title", "body"}, Meta: []string{"lang"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *tableBundle) appExec(sql string, args ...any) {
	b.t.Helper()
	if _, err := b.app.Pool.Exec(context.Background(), sql, args...); err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
}

// producerArgs are a table producer's arguments and environment.
func (b *tableBundle) start(args []string, env ...string) *localenv.Process {
	return b.startProducerWith(append([]string{"--table-source", "articles", "--json"}, args...), append([]string{"APP_DSN=" + b.app.URL}, env...)...)
}

// run runs a table producer to its end and returns the chunks its runs
// published, from their JSON summaries, and its exit error.
func (b *tableBundle) run(env ...string) (int, error) {
	b.t.Helper()
	p := b.start(nil, env...)
	err := p.Wait()
	return published(b.t, p.LogPath()), err
}

// published sums the chunks_published of the run summaries in a log.
func published(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s producer.Summary
		if strings.Contains(sc.Text(), `"chunks_published"`) && json.Unmarshal(sc.Bytes(), &s) == nil {
			n += s.Chunks
		}
	}
	return n
}

// stored is the text stored for the article id, "" if none, and how
// many vectors the document has.
func (b *tableBundle) stored(id string) (string, int) {
	b.t.Helper()
	var text string
	n := b.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1`, messages.DocID("articles", id))
	if n > 0 {
		_ = b.db.Pool.QueryRow(context.Background(), `SELECT text FROM chunk_embeddings WHERE doc_id = $1`, messages.DocID("articles", id)).Scan(&text)
	}
	return text, n
}

// A follower keeps the index in step with the table: inserts and
// updates are embedded, deletes, primary-key changes and TRUNCATE are
// erased, an aborted transaction changes nothing; with its application
// database's connections cut mid-stream, it reconnects and carries on.
func TestTableSourceFollowsTheTable(t *testing.T) {
	t.Parallel()
	b := newTableBundle(t)
	b.appExec(`INSERT INTO articles VALUES (1, 'one', 'existing row', 'en')`)
	b.startServices()
	addr := freeAddr(t)
	b.start([]string{"--follow", "--follow-poll", "1m"}, "METRICS_ADDR="+addr)
	b.eventually(30*time.Second, "the first load stored", func() bool { s, _ := b.stored("1"); return s == "one\n\nexisting row" })
	b.eventually(10*time.Second, "the source's metrics exported", func() bool {
		m := scrape(addr)
		return strings.Contains(m, `sluice_source_changes_pending{source="articles"} 0`) && strings.Contains(m, `sluice_source_lag_seconds{source="articles"}`)
	})
	if s, err := sources.Get(context.Background(), b.db.Pool, "articles"); err != nil || !s.Live || s.LastSyncAt == nil || s.Lag == nil {
		t.Errorf("the followed source reads %+v (%v); want live, with its last sync and lag", s, err)
	}

	b.appExec(`INSERT INTO articles VALUES (2, 'two', 'inserted', 'fr')`)
	b.appExec(`UPDATE articles SET body = 'updated row' WHERE id = 1`)
	ctx := context.Background()
	tx, err := b.app.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO articles VALUES (9, 'aborted', 'never committed', 'en')`); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	b.eventually(30*time.Second, "the insert and the update stored", func() bool {
		s1, _ := b.stored("1")
		s2, _ := b.stored("2")
		return s1 == "one\n\nupdated row" && s2 == "two\n\ninserted"
	})

	// The application database drops the follower's connections, as a
	// restart of its server does.
	var cut int
	if err := b.app.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE '%LISTEN%'`).Scan(&cut); err != nil || cut == 0 {
		t.Fatalf("terminated %d listening backends (%v); want the follower's", cut, err)
	}
	b.appExec(`UPDATE articles SET id = 20 WHERE id = 2`)
	b.appExec(`INSERT INTO articles VALUES (3, 'three', 'to delete', 'en')`)
	b.appExec(`DELETE FROM articles WHERE id = 3`)
	b.eventually(30*time.Second, "the key change erased the old key and stored the new", func() bool {
		_, n2 := b.stored("2")
		s20, _ := b.stored("20")
		return n2 == 0 && s20 == "two\n\ninserted"
	})
	if _, n := b.stored("9"); n != 0 || b.count(`SELECT count(*) FROM documents WHERE doc_id = $1`, messages.DocID("articles", "9")) != 0 {
		t.Error("a row of an aborted transaction was ingested")
	}
	if b.count(`SELECT count(*) FROM documents WHERE doc_id = $1 AND status <> 'deleted'`, messages.DocID("articles", "3")) != 0 {
		t.Error("a row inserted and deleted is a live document")
	}

	b.appExec(`TRUNCATE articles`)
	b.eventually(30*time.Second, "TRUNCATE erased every document", func() bool {
		return b.count(`SELECT count(*) FROM documents WHERE source_id = 'articles' AND status <> 'deleted'`) == 0 &&
			b.count(`SELECT count(*) FROM chunk_embeddings`) == 0
	})
	b.noLeaks()
}

// A follower whose application database's server dies and comes back
// mid-stream carries on: the changes committed before the server died,
// drained or not, and those committed after it is back, are all stored.
func TestTableSourceSurvivesARestartOfItsDatabase(t *testing.T) {
	t.Parallel()
	pg := testenv.NewPostgres(t)
	b := newTableBundle(t, testenv.OnServer(pg))
	b.appExec(`INSERT INTO articles VALUES (1, 'one', 'before', 'en')`)
	b.startServices()
	b.start([]string{"--follow", "--follow-poll", "1m"})
	b.eventually(30*time.Second, "the first load stored", func() bool { s, _ := b.stored("1"); return s == "one\n\nbefore" })

	ctx := context.Background()
	b.appExec(`INSERT INTO articles VALUES (2, 'two', 'committed as the server died', 'en')`)
	if err := pg.StopImmediate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	b.app.Pool.Reset() // the test's own connections died with the server
	b.appExec(`UPDATE articles SET body = 'after' WHERE id = 1`)
	b.eventually(30*time.Second, "every committed change stored after the restart", func() bool {
		s1, _ := b.stored("1")
		s2, _ := b.stored("2")
		return s1 == "one\n\nafter" && s2 == "two\n\ncommitted as the server died"
	})
	if q := queued(t, b.app.Pool); q != 0 {
		t.Errorf("%d changes still queued", q)
	}
}

// 100,000 updates to the same ten rows publish one job per row.
func TestTableSourceCoalescesABurst(t *testing.T) {
	t.Parallel()
	b := newTableBundle(t)
	b.appExec(`INSERT INTO articles SELECT i, 'title ' || i, 'v0', 'en' FROM generate_series(1, 10) i`)
	if n, err := b.run(); err != nil || n != 10 {
		t.Fatalf("first load: %v, %d chunks published; want 10", err, n)
	}
	b.appExec(`DO $$ BEGIN FOR v IN 1..10000 LOOP UPDATE articles SET body = 'v' || v; END LOOP; END $$`)
	if n, err := b.run(); err != nil || n != 10 {
		t.Fatalf("after 100,000 updates: %v, %d chunks published; want 10, one per row", err, n)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE source_id = 'articles' AND version = 2`); n != 10 {
		t.Errorf("%d documents at their second version, want 10", n)
	}
}

// A producer killed -9 after its run recorded and published a drain but
// before it acknowledged the drained changes leaves them queued; the next
// run drains them again and the index converges, each change embedded
// or erased once.
func TestTableSourceKilledBeforeAckConverges(t *testing.T) {
	t.Parallel()
	b := newTableBundle(t)
	b.appExec(`INSERT INTO articles SELECT i, 'title ' || i, 'v0', 'en' FROM generate_series(1, 5) i`)
	b.startServices()
	if n, err := b.run(); err != nil || n != 5 {
		t.Fatalf("first load: %v, %d chunks; want 5", err, n)
	}
	b.appExec(`UPDATE articles SET body = 'v1' WHERE id IN (1, 2)`)
	b.appExec(`DELETE FROM articles WHERE id = 5`)
	_, err := b.run(crashpoint.EnvVar + "=" + producer.CrashAfterRunBeforeAck)
	if err == nil {
		t.Fatal("the producer did not die at its crash point")
	}
	if q := queued(t, b.app.Pool); q != 3 {
		t.Fatalf("%d changes queued after the kill, want the 3 unacknowledged", q)
	}
	// The killed run recorded and published the two updates; the rerun
	// finds them recorded and publishes nothing again.
	if n, err := b.run(); err != nil || n != 0 {
		t.Fatalf("rerun: %v, %d chunks published; want none, the killed run's being recorded", err, n)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE source_id = 'articles' AND status <> 'deleted' AND version = 2`); n != 2 {
		t.Errorf("%d documents at their second version, want the 2 updated rows, each changed once", n)
	}
	if q := queued(t, b.app.Pool); q != 0 {
		t.Fatalf("%d changes queued after the rerun, want none", q)
	}
	b.eventually(30*time.Second, "the index converged", func() bool {
		s1, _ := b.stored("1")
		s3, _ := b.stored("3")
		_, n5 := b.stored("5")
		return s1 == "title 1\n\nv1" && s3 == "title 3\n\nv0" && n5 == 0 && b.count(`SELECT count(*) FROM chunk_embeddings`) == 4
	})
	if d := b.count(`SELECT count(*) FROM document_deletions WHERE doc_id = $1`, messages.DocID("articles", "5")); d != 1 {
		t.Errorf("the deleted row's document was erased %d times, want once", d)
	}
	b.noLeaks()
}

// freeAddr is a local address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape reads the metrics served at addr; "" when it cannot.
func scrape(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func queued(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM sluice_sync.queue WHERE source = 'articles'`).Scan(&n); err != nil {
		t.Fatal(fmt.Errorf("count queued changes: %w", err))
	}
	return n
}
