package startuptest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/migrations"
)

// A producer whose NATS user may not publish chunk jobs — here the
// consumer's, which may read the streams but not publish to them —
// starts, since it reaches NATS, but fails its run when its publishes
// are denied: it exits non-zero naming NATS_URL and records the run
// failed with that reason, instead of waiting out its patience and
// exiting 0 with every chunk owed.
func TestProducerFailsItsRunWhenNATSDeniesItsPublishes(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	n, _ := testenv.NewJetStream(t, broker.Topology{})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "doc.txt"), []byte("a document the producer may not publish"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DATABASE_URL": db.RoleURL(migrations.ProducerRole),
		"NATS_URL":     n.URLFor(natsauth.Consumer),
		// A patience longer than the test's bound: a producer that took
		// the denial for an outage would not end in time.
		"PUBLISH_PATIENCE": "5m",
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stdout, stderr testenv.Buffer
	err := producer.Run(ctx, []string{"--source", "denied", dir}, lookupIn(env), strings.NewReader(""), &stdout, &stderr)
	if code := service.ExitCode(err); code == 0 || ctx.Err() != nil {
		t.Fatalf("producer exited %d (%v), want a failed run before the test's bound:\n%s", code, err, tail(stderr.String()))
	}
	if !strings.Contains(err.Error(), "NATS_URL ") || !strings.Contains(err.Error(), "permissions violation") {
		t.Errorf("producer's error does not name NATS_URL and the denial: %v", err)
	}
	var status, reason string
	if err := db.Pool.QueryRow(t.Context(), `SELECT status, coalesce(halted_reason, '') FROM ingest_runs WHERE source_id = 'denied'`).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || !strings.Contains(reason, "NATS_URL") {
		t.Errorf("run recorded %s (%q), want failed naming NATS_URL", status, reason)
	}
	if strings.Contains(stdout.String(), "chunks owed") {
		t.Errorf("the summary reports owed chunks for a run that failed:\n%s", stdout.String())
	}
}
