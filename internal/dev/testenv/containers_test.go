package testenv

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// TestContainers runs the container fallback whenever a Docker engine
// answers, with the images SLUICE_POSTGRES_IMAGE and SLUICE_NATS_IMAGE name
// (the public ones by default). make test-deploy sets SLUICE_TEST_DEPLOY=1,
// under which an engine that does not answer is a failure.
func TestContainers(t *testing.T) {
	t.Parallel()
	if err := dockerAvailable(t.Context()); err != nil {
		if os.Getenv("SLUICE_TEST_DEPLOY") == "1" {
			t.Fatalf("no Docker engine answers: %v (make test-deploy starts one)", err)
		}
		t.Skipf("no Docker engine answers (%v): make test-deploy runs this test", err)
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		pg, err := startContainerPostgres(ctx, postgresImage())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := pg.Close(); err != nil {
				t.Errorf("terminate %s: %v", postgresImage(), err)
			}
		})
		conn, err := pgx.Connect(ctx, pg.URL)
		if err != nil {
			t.Fatalf("connect to %s: %v", postgresImage(), err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
			t.Fatalf("%s has no pgvector: %v", postgresImage(), err)
		}
		var d float64
		if err := conn.QueryRow(ctx, `SELECT '[1,2,3]'::vector <-> '[1,2,5]'::vector`).Scan(&d); err != nil || d != 2 {
			t.Fatalf("vector distance = %v, %v; want 2", d, err)
		}
		if err := pg.StopImmediate(ctx); !errors.Is(err, localenv.ErrNotLocal) {
			t.Errorf("crash helpers on a container: %v, want localenv.ErrNotLocal", err)
		}
	})
	t.Run("nats", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		n, err := startContainerNATS(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := n.Close(); err != nil {
				t.Errorf("terminate %s: %v", natsImage(), err)
			}
		})
		nc, err := nats.Connect(n.URL, nats.Timeout(5*time.Second))
		if err != nil {
			t.Fatalf("connect to %s: %v", natsImage(), err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe.>"}})
		if err != nil {
			t.Fatalf("%s without JetStream: %v", natsImage(), err)
		}
		if _, err := js.Publish(ctx, "probe.one", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if m, err := s.GetLastMsgForSubject(ctx, "probe.one"); err != nil || string(m.Data) != "x" {
			t.Fatalf("stored message = %v, %v; want x", m, err)
		}
	})
}
