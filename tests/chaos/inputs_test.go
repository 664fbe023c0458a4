package chaos_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// One bad record never aborts a run: a 3 MiB record, an id holding NUL and
// a 5,000-byte id are each parked with a clear class, the good records
// are stored, and the run ends in a terminal status.
func TestBadRecordsAreParkedAlone(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{})
	f.services()
	var b strings.Builder
	line := func(id string, text string, meta map[string]any) {
		rec := map[string]any{"id": id, "text": text}
		if meta != nil {
			rec["metadata"] = meta
		}
		out, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(out)
		b.WriteByte('\n')
	}
	for i := range 5 {
		line(fmt.Sprintf("good-%d", i), fmt.Sprintf("good record %d about rivers", i), nil)
	}
	line("huge", "a 3 MiB record: its metadata alone is over every limit", map[string]any{"blob": strings.Repeat("m", 3<<20)})
	line("nul\x00id", "a record whose id holds a NUL", nil)
	line(strings.Repeat("x", 5000), "a record whose id is 5,000 bytes", nil)
	line("fat-metadata", "small text, huge metadata", map[string]any{"blob": strings.Repeat("m", 200<<10)})
	for i := 5; i < 10; i++ {
		line(fmt.Sprintf("good-%d", i), fmt.Sprintf("good record %d about gates", i), nil)
	}
	path := filepath.Join(f.dir, "records.jsonl")
	writeFile(t, path, b.String())

	p := f.spawn("producer", f.env("producer", freeAddr(t), "CHUNK_SIZE=200", "CHUNK_UNIT=chars"), "--source", "bad", "--jsonl", path)
	if code, err := p.wait(2 * time.Minute); err != nil || code != 0 {
		t.Fatalf("producer exited %d (%v):\n%s", code, err, p.logTail())
	}
	f.converge(2*time.Minute, -1)
	if n := f.count(`SELECT count(*) FROM documents WHERE source_native_id LIKE 'good-%' AND status = 'ready'`); n != 10 {
		t.Errorf("%d good records ready, want 10", n)
	}
	rows, err := f.db.Pool.Query(t.Context(), `
		SELECT d.source_native_id, l.error_class FROM dead_letters l JOIN documents d USING (doc_id) ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{}
	for rows.Next() {
		var id, class string
		if err := rows.Scan(&id, &class); err != nil {
			t.Fatal(err)
		}
		classes[id] = class
	}
	want := map[string]string{"huge": "too_large", "fat-metadata": "too_large"}
	for id, class := range want {
		if classes[id] != class {
			t.Errorf("record %q parked as %q, want %q (all: %v)", id, classes[id], class, classes)
		}
	}
	bad := 0
	for id, class := range classes {
		if strings.Contains(id, `\x00`) || strings.HasPrefix(id, "xxxx") {
			bad++
			if class != "invalid_message" {
				t.Errorf("record %q parked as %q, want invalid_message", id, class)
			}
		}
	}
	if bad != 2 {
		t.Errorf("%d of the two records with bad ids parked (all: %v)", bad, classes)
	}
	// The dlq-replayer's housekeeping settles run statuses every second.
	f.eventually(30*time.Second, "the run to reach a terminal status", func() bool {
		n, ok := f.tryCount(`SELECT count(*) FROM ingest_runs WHERE finished_at IS NOT NULL AND status IN ('completed', 'completed_with_failures')`)
		return ok && n == 1
	})
}

// A hung embedder's work is cut off by the soft time limit and, once its
// delivery budget is spent, parked as timeout_exhausted: never retried
// forever, never left to JetStream's hard redelivery. The breaker is kept
// shut (its threshold above the attempts it sees), so that every attempt
// meets the hang: a chunk an open breaker refuses at its last delivery is
// parked transient_exhausted instead, as TestOutageOpensBreakerAndStopsPulling
// covers.
func TestHungEmbedderIsParkedUnderTheSoftLimit(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{sim: []string{"--rate-hang", "1", "--hang-for", "10m"},
		env: []string{"EMBEDDER_TIMEOUT=30s", "SOFT_TIME_LIMIT=2s", "MAX_DELIVERIES=2", "AMBIGUOUS_RETRIES=1", "PARK_RETRY_DELAY=1h",
			"BREAKER_FAILURES=100"}})
	f.oneOfEach()
	dir := f.writeCorpus("hung", 2, 10)
	f.runProducer("hung", dir)
	v := f.converge(2*time.Minute, 2)
	if v.stored != 0 || v.parked == 0 {
		t.Fatalf("%d stored, %d parked; want every chunk parked", v.stored, v.parked)
	}
	if n := f.count(`SELECT count(*) FROM dead_letters WHERE error_class <> 'timeout_exhausted'`); n != 0 {
		t.Errorf("%d dead letters of another class than timeout_exhausted", n)
	}
}
