package consumer_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// buildConsumer builds cmd/consumer: crash tests need a real process to die.
func buildConsumer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "consumer")
	out, err := exec.Command("go", "build", "-o", path, "github.com/sluicehq/sluice/cmd/consumer").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/consumer: %v\n%s", err, out)
	}
	return path
}

// runConsumer starts the consumer as a process, with env (KEY=value)
// over the test's settings. With a crash point it waits for the crash
// and checks the exit status; without one it runs until the test ends.
func (b *bundle) runConsumer(bin, natsURL, crash string, env ...string) {
	t := b.t
	t.Helper()
	cmd := exec.Command(bin, "--batch-size", "8", "--fetch-wait", "50ms")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+b.db.URL, "NATS_URL="+natsURL, "EMBEDDER_URL="+b.sim.URL(),
		fmt.Sprintf("EMBEDDING_DIMS=%d", dims), "METRICS_ADDR=", "LOG_FORMAT=json", "LOG_LEVEL=warn",
		"ACK_WAIT=2s", "MAX_DELIVERIES=5", crashpoint.EnvVar+"="+crash)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if crash == "" {
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Error("consumer did not stop on SIGINT")
			}
		})
		return
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != crashpoint.ExitCode {
			t.Fatalf("consumer exited with %v, want a crash at %s\n%s", err, crash, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("consumer never reached crash point %s\n%s", crash, stderr.String())
	}
}

// A consumer killed at each crash point, then restarted, converges: every
// chunk stored or parked once, no duplicate vector, no second dead letter.
func TestCrashPointsConverge(t *testing.T) {
	t.Parallel()
	bin := buildConsumer(t)
	for _, point := range []string{"after-commit-before-ack", "after-park-before-term", "mid-embed"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			o := options{sim: embedsim.Config{Faults: embedsim.Faults{
				Poison:  []embedsim.PoisonRule{{Match: "POISON", Kind: embedsim.PoisonInvalidInput}},
				Latency: embedsim.Latency{Dist: embedsim.LatencyFixed, Value: 200 * time.Millisecond},
			}}, ackWait: 2 * time.Second}
			b := setup(t, o)
			docs := map[string][]byte{"poison.txt": []byte("a POISON chunk")}
			for i := range 20 {
				docs[fmt.Sprintf("d%02d.txt", i)] = []byte(fmt.Sprintf("crash test document %d", i))
			}
			b.produce("crash", docs)
			url := b.natsURL()
			b.runConsumer(bin, url, point)
			b.runConsumer(bin, url, "")
			b.waitSettled(60 * time.Second)
			if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 20 {
				t.Errorf("stored %d of 20", n)
			}
			if n := b.count(`SELECT count(*) FROM (SELECT 1 FROM chunk_embeddings GROUP BY doc_id, chunk_index HAVING count(*) > 1) d`); n != 0 {
				t.Errorf("%d duplicated chunks", n)
			}
			if n := b.count(`SELECT count(*) FROM outbox`); n != 1 {
				t.Errorf("%d dead letters for one poison chunk, want 1", n)
			}
			if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status NOT IN ('stored', 'parked')`); n != 0 {
				t.Errorf("%d chunks neither stored nor parked", n)
			}
		})
	}
}

// natsURL is the consumer role's URL, as the consumer binary is given.
func (b *bundle) natsURL() string {
	return b.nats.URLFor(natsauth.Consumer)
}
