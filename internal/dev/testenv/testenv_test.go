package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDatabaseIsPrivateAndMigrated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testenv.NewDatabase(t)
	b := testenv.NewDatabase(t)
	if a.Name == b.Name {
		t.Fatalf("two tests share database %s", a.Name)
	}
	if _, err := a.Pool.Exec(ctx, `INSERT INTO ingest_runs (run_id, source_id) VALUES ('r1', 's')`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM ingest_runs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d rows written to a", n)
	}
}

func TestPostgresCommittedRowSurvivesImmediateStop(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testCommittedRowSurvivesImmediateStop(t, testenv.NewPostgres(t))
	})
	t.Run("pgvector", func(t *testing.T) {
		t.Parallel()
		testCommittedRowSurvivesImmediateStop(t, testenv.NewPgvector(t))
	})
}

func testCommittedRowSurvivesImmediateStop(t *testing.T, pg *testenv.Postgres) {
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.OnServer(pg))
	if _, err := db.Pool.Exec(ctx, `INSERT INTO ingest_runs (run_id, source_id) VALUES ('committed', 's')`); err != nil {
		t.Fatal(err)
	}
	if err := pg.StopImmediate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, db.URL); err == nil {
		t.Fatal("server still answers after an immediate stop")
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var source string
	if err := conn.QueryRow(ctx, `SELECT source_id FROM ingest_runs WHERE run_id = 'committed'`).Scan(&source); err != nil {
		t.Fatalf("committed row lost across an immediate stop: %v", err)
	}
}

func TestNATSAckedMessageSurvivesKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := testenv.NewNATS(t)
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CRASH", Subjects: []string{"crash.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "crash.one", []byte("survives")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// A fresh client: the point is what the server kept, not reconnects.
	nc2, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, err := jetstream.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js2.Stream(ctx, "CRASH")
	if err != nil {
		t.Fatalf("stream lost across SIGKILL: %v", err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, "crash.one")
	if err != nil {
		t.Fatalf("acked message lost across SIGKILL: %v", err)
	}
	if string(msg.Data) != "survives" {
		t.Fatalf("got %q after restart", msg.Data)
	}
}
