package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/messages"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

func noRetries() embedder.ResilientConfig { return embedder.ResilientConfig{MaxRetries: -1} }

// The seed drill: three 503s then a 200 store the chunk exactly once,
// after three redeliveries spaced by growing delays, with no dead letter.
func TestTransientFailuresRetryThenStoreOnce(t *testing.T) {
	t.Parallel()
	var log testenv.Buffer
	o := options{
		sim:       embedsim.Config{Faults: embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: "flaky", Sequence: "503,503,503,200"}}}},
		resilient: noRetries(),
		log:       &log,
	}
	b := setup(t, o)
	b.startConsumer(o)
	text := "a flaky chunk that the provider refuses three times"
	b.produce("drill", map[string][]byte{"flaky.txt": []byte(text)})
	b.waitSettled(30 * time.Second)

	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 1 {
		t.Fatalf("%d vectors stored, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("%d dead letters for a chunk that recovered", n)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE status = 'ready'`); n != 1 {
		t.Fatalf("document not ready")
	}
	var times []time.Time
	for _, r := range b.sim.Requests() {
		for _, in := range r.Texts {
			if in == text {
				times = append(times, r.Time)
			}
		}
	}
	if len(times) != 4 {
		t.Fatalf("embedder saw the chunk %d times, want 4 (3 failures + 1 success)", len(times))
	}
	// The delays are 99, 198 and 396 ms (jitter pinned at 0.99). Each
	// request's recorded time also carries the machine's scheduling noise,
	// so the check is on the whole span and on the first against the last
	// gap, whose difference (about 300 ms) is well above that noise.
	first, last := times[1].Sub(times[0]), times[3].Sub(times[2])
	if last <= first {
		t.Errorf("retry delays not growing: first gap %v, last gap %v", first, last)
	}
	if span := times[3].Sub(times[0]); span < 620*time.Millisecond {
		t.Errorf("three redeliveries took %v, less than the backoff's 693 ms", span)
	}
	if attempts := b.count(`SELECT attempts FROM ingest_manifest`); attempts != 4 {
		t.Errorf("manifest attempts = %d, want 4", attempts)
	}
	// The drill's log: three retries, each with its ids, class, attempt and
	// a growing delay, and never the chunk's text.
	var retries []map[string]any
	for _, line := range strings.Split(log.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["message"] == "chunk retried" {
			retries = append(retries, e)
		}
	}
	if len(retries) != 3 {
		t.Fatalf("%d retries logged, want 3:\n%s", len(retries), log.String())
	}
	for i, e := range retries {
		if e["level"] != "info" || e["attempt"] != float64(i+1) || e["error_class"] != "server_error" || e["doc_id"] == nil ||
			e["source_id"] != "drill" || e["run_id"] == nil {
			t.Errorf("retry %d logged as %v; want info, attempt %d, server_error, the doc id, source and run", i+1, e, i+1)
		}
		if i > 0 && e["delay"].(float64) <= retries[i-1]["delay"].(float64) {
			t.Errorf("retry delays not growing in the log: %v then %v", retries[i-1]["delay"], e["delay"])
		}
	}
	if strings.Contains(log.String(), text) {
		t.Error("the log holds the chunk's text")
	}
}

// Permanent rejections park at once, with the job verbatim in the outbox.
func TestPermanentFailureParksAfterOneAttempt(t *testing.T) {
	t.Parallel()
	var log testenv.Buffer
	o := options{sim: embedsim.Config{Faults: embedsim.Faults{
		Sequences: []embedsim.SequenceRule{{Match: "missing-model", Sequence: "404"}},
		Poison:    []embedsim.PoisonRule{{Match: "malformed-input", Kind: embedsim.PoisonInvalidInput}},
	}}, log: &log}
	b := setup(t, o)
	b.startConsumer(o)
	b.produce("perm", map[string][]byte{
		"a.txt": []byte("this chunk names a missing-model"),
		"b.txt": []byte("this chunk is malformed-input"),
	})
	b.waitSettled(30 * time.Second)

	rows, err := b.db.Pool.Query(context.Background(), `
		SELECT m.job, m.attempts, o.payload::text, o.subject, p.payload FROM ingest_manifest m
		JOIN outbox o ON o.payload->>'doc_id' = m.doc_id
		JOIN dead_letter_payloads p ON p.outbox_id = o.id AND p.doc_id = m.doc_id
		WHERE m.status = 'parked' ORDER BY m.doc_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var job, kept []byte
		var attempts int
		var payload, subject string
		if err := rows.Scan(&job, &attempts, &payload, &subject, &kept); err != nil {
			t.Fatal(err)
		}
		dl, err := messages.DecodeDeadLetter([]byte(payload))
		if err != nil {
			t.Fatalf("outbox payload is not a dead letter: %v", err)
		}
		// The DLQ message carries no text: the job is kept, verbatim,
		// in dead_letter_payloads, where a delete can erase it.
		if len(dl.Payload) != 0 || !bytes.Equal(kept, job) {
			t.Errorf("dead letter carries %q; kept payload differs from the published job:\n%s\n%s", dl.Payload, kept, job)
		}
		if attempts != 1 || dl.Attempts != 1 || dl.Disposition != messages.DispositionQuarantine {
			t.Errorf("%s: attempts=%d/%d disposition=%s; want 1 attempt, quarantine", dl.ErrorClass, attempts, dl.Attempts, dl.Disposition)
		}
		if subject != "dlq.quarantine.perm" {
			t.Errorf("subject %q", subject)
		}
		seen[dl.ErrorClass] = true
	}
	if !seen["not_found"] || !seen["bad_request"] {
		t.Fatalf("parked classes %v; want not_found and bad_request", seen)
	}
	// Each park is logged with the chunk's ids, its source and its run.
	parks := 0
	for _, line := range strings.Split(log.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["message"] != "chunk parked" {
			continue
		}
		parks++
		if e["doc_id"] == nil || e["source_id"] != "perm" || e["run_id"] == nil || e["run_id"] == "" {
			t.Errorf("park logged as %v; want the doc id, source perm and the run id", e)
		}
	}
	if parks != 2 {
		t.Errorf("%d parks logged, want 2:\n%s", parks, log.String())
	}
	for _, r := range b.sim.Requests() {
		if r.Status == 200 {
			continue
		}
		for _, in := range r.Texts {
			if n := b.sim.SeenCount(in); n != 1 {
				t.Errorf("poison input sent %d times, want 1", n)
			}
		}
	}
}

// One poison input in a batch of 64 costs only itself: embed-sim names
// it in its 400 reply, as OpenAI does, so it is parked after one request
// (a bisection would have sent it seven times) and the other 63 stored.
func TestPoisonInBatchIsIsolated(t *testing.T) {
	t.Parallel()
	o := options{sim: embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "POISON", Kind: embedsim.PoisonInvalidInput}}}},
		batchSize: 64}
	b := setup(t, o)
	docs := map[string][]byte{}
	var poison string
	for i := range 64 {
		text := fmt.Sprintf("document number %d talks about topic %d", i, i%7)
		if i == 37 {
			text += " POISON"
			poison = text
		}
		docs[fmt.Sprintf("doc%02d.txt", i)] = []byte(text)
	}
	b.produce("batch", docs)
	b.startConsumer(o)
	b.waitSettled(30 * time.Second)
	if n := b.sim.SeenCount(poison); n != 1 {
		t.Errorf("poison input sent %d times, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 63 {
		t.Errorf("stored %d, want 63", n)
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked'`); n != 1 {
		t.Errorf("parked %d, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 1 {
		t.Errorf("outbox rows %d, want 1", n)
	}
}

// The compliance stage escalates a chunk holding a private key before any
// text leaves the process; encodings are recorded or parked.
func TestPolicyAndEncodings(t *testing.T) {
	t.Parallel()
	o := options{}
	b := setup(t, o)
	b.startConsumer(o)
	secret := "config\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
	sum := b.produce("enc", map[string][]byte{
		"key.txt":   []byte(secret),
		"cafe.txt":  []byte("caf\xe9 na\xefve \x93quoted\x94"),
		"bin.txt":   {0x00, 0x01, 0x81, 0xff, 0x00, 0x02},
		"empty.txt": {},
	})
	if sum.Seen != 4 || sum.Failed != 1 || sum.Empty != 1 {
		t.Fatalf("summary %+v", sum)
	}
	b.waitSettled(30 * time.Second)

	for _, r := range b.sim.Requests() {
		for _, in := range r.Texts {
			if strings.Contains(in, "PRIVATE KEY") {
				t.Fatal("a chunk holding a private key reached the embedder")
			}
		}
	}
	var disposition, class, code string
	if err := b.db.Pool.QueryRow(context.Background(), `
		SELECT payload->>'disposition', payload->>'error_class', payload->>'error_code' FROM outbox
		WHERE subject LIKE 'dlq.escalate.%'`).Scan(&disposition, &class, &code); err != nil {
		t.Fatalf("no escalation in the outbox: %v", err)
	}
	if code != "private_key" || class != "policy_violation" {
		t.Errorf("escalation %s/%s, want policy_violation/private_key", class, code)
	}
	var codec, text string
	if err := b.db.Pool.QueryRow(context.Background(), `
		SELECT d.codec, e.text FROM documents d JOIN chunk_embeddings e USING (doc_id)
		WHERE d.source_native_id = 'cafe.txt'`).Scan(&codec, &text); err != nil {
		t.Fatal(err)
	}
	if codec != "windows-1252" || text != "café naïve “quoted”" {
		t.Errorf("codec %q text %q", codec, text)
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE payload->>'error_class' = 'unsupported_format'`); n != 1 {
		t.Errorf("binary file: %d unsupported_format dead letters, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE status = 'empty'`); n != 1 {
		t.Errorf("empty file not recorded as empty")
	}
}

// Re-running the producer over an unchanged corpus publishes nothing and
// moves no row; an edited document replaces its chunks.
func TestRerunIsNoOpAndEditReplaces(t *testing.T) {
	t.Parallel()
	o := options{}
	b := setup(t, o)
	b.startConsumer(o)
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 30)
	docs := map[string][]byte{"a.txt": []byte(long), "b.txt": []byte("short document")}
	first := b.produce("rerun", docs)
	b.waitSettled(30 * time.Second)
	if first.Chunks < 3 {
		t.Fatalf("expected a multi-chunk document, published %d chunks", first.Chunks)
	}
	var before time.Time
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT max(updated_at) FROM chunk_embeddings`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	again := b.produce("rerun", docs)
	if again.Chunks != 0 || again.Unchanged != 2 {
		t.Fatalf("re-run published %d chunks, unchanged %d; want 0 and 2", again.Chunks, again.Unchanged)
	}
	var after time.Time
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT max(updated_at) FROM chunk_embeddings`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if !after.Equal(before) {
		t.Fatal("re-run moved updated_at")
	}

	b.produce("rerun", map[string][]byte{"a.txt": []byte("now a one-chunk document"), "b.txt": []byte("short document")})
	b.waitSettled(30 * time.Second)
	var version, chunks int
	var status string
	if err := b.db.Pool.QueryRow(context.Background(), `
		SELECT d.version, d.status, (SELECT count(*) FROM chunk_embeddings e WHERE e.doc_id = d.doc_id)
		FROM documents d WHERE source_native_id = 'a.txt'`).Scan(&version, &status, &chunks); err != nil {
		t.Fatal(err)
	}
	if version != 2 || status != "ready" || chunks != 1 {
		t.Fatalf("edited doc: version %d status %s chunks %d; want 2 ready 1", version, status, chunks)
	}
}

// A 429 with Retry-After: 2 is not redelivered before two seconds pass.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	o := options{sim: embedsim.Config{Faults: embedsim.Faults{RetryAfterSeconds: 2,
		Sequences: []embedsim.SequenceRule{{Match: "throttled", Sequence: "429,200"}}}}, resilient: noRetries()}
	b := setup(t, o)
	b.startConsumer(o)
	text := "a throttled chunk"
	b.produce("ra", map[string][]byte{"t.txt": []byte(text)})
	b.waitSettled(30 * time.Second)
	var times []time.Time
	for _, r := range b.sim.Requests() {
		for _, in := range r.Texts {
			if in == text {
				times = append(times, r.Time)
			}
		}
	}
	if len(times) != 2 {
		t.Fatalf("chunk sent %d times, want 2", len(times))
	}
	if gap := times[1].Sub(times[0]); gap < 2*time.Second {
		t.Fatalf("redelivered after %v, before the 2s Retry-After", gap)
	}
}

// An outage longer than the in-process retry budget opens the breaker:
// the consumer stops pulling, so the embedder sees only probes and
// deliveries do not climb; after recovery every chunk is stored.
func TestOutageOpensBreakerAndStopsPulling(t *testing.T) {
	t.Parallel()
	o := options{
		resilient: embedder.ResilientConfig{MaxRetries: -1, FailureThreshold: 2, BreakerDelay: time.Second},
		pipe:      pipeline.Config{MaxDeliveries: 50},
		batchSize: 8,
	}
	b := setup(t, o)
	outage := 4 * time.Second
	start := time.Now()
	b.sim.SetOutage(start, start.Add(outage))
	emb := b.startConsumer(o)
	docs := map[string][]byte{}
	for i := range 40 {
		docs[fmt.Sprintf("d%02d.txt", i)] = []byte(fmt.Sprintf("outage document %d", i))
	}
	b.produce("outage", docs)
	deadline := time.Now().Add(outage)
	opened := false
	for time.Now().Before(deadline) && !opened {
		opened = emb.State() == embedder.BreakerOpen
		time.Sleep(10 * time.Millisecond)
	}
	if !opened {
		t.Fatal("breaker never opened during the outage")
	}
	b.waitSettled(30 * time.Second)
	during := 0
	for _, r := range b.sim.Requests() {
		if r.Time.Before(start.Add(outage)) {
			during++
		}
	}
	// Threshold failures, then about one probe per breaker delay.
	if limit := 2 + int(outage/time.Second) + 2; during > limit {
		t.Errorf("embedder got %d requests during a %s outage; the breaker should hold it to about %d", during, outage, limit)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 40 {
		t.Errorf("stored %d of 40 after recovery", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Errorf("%d chunks parked by an outage the system rode out", n)
	}
}

// A reply with the wrong dimension, or a NaN, parks just that chunk.
func TestBadVectorsAreParked(t *testing.T) {
	t.Parallel()
	o := options{sim: embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{
		{Match: "WRONGDIMS", Kind: embedsim.PoisonWrongDims},
		{Match: "NOTANUMBER", Kind: embedsim.PoisonNaN},
	}}}, batchSize: 8}
	b := setup(t, o)
	b.produce("vec", map[string][]byte{
		"a.txt": []byte("fine text one"), "b.txt": []byte("this one gets WRONGDIMS"),
		"c.txt": []byte("this one gets NOTANUMBER"), "d.txt": []byte("fine text two"),
	})
	b.startConsumer(o)
	b.waitSettled(30 * time.Second)
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 2 {
		t.Errorf("stored %d, want the 2 good chunks", n)
	}
	for _, class := range []string{"dimension_mismatch", "invalid_vector"} {
		if n := b.count(`SELECT count(*) FROM outbox WHERE payload->>'error_class' = $1`, class); n != 1 {
			t.Errorf("%s: %d dead letters, want 1", class, n)
		}
	}
}

// A full INGEST stream (DiscardNew) makes the producer wait and publish
// again; every chunk arrives, none is dropped.
func TestFullStreamBackPressureLosesNothing(t *testing.T) {
	t.Parallel()
	o := options{ingestMaxMsgs: 5, batchSize: 2}
	b := setup(t, o)
	b.startConsumer(o)
	sum := b.produce("full", func() map[string][]byte {
		docs := map[string][]byte{}
		for i := range 40 {
			docs[fmt.Sprintf("d%02d.txt", i)] = []byte(fmt.Sprintf("back-pressure document %d", i))
		}
		return docs
	}())
	if sum.Chunks != 40 || sum.PublishWait == 0 {
		t.Fatalf("published %d chunks after %d waits; want 40 after at least one wait for a full stream", sum.Chunks, sum.PublishWait)
	}
	b.waitSettled(30 * time.Second)
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 40 {
		t.Fatalf("stored %d of 40", n)
	}
}

// A stale job for an older version, delivered after the newer version was
// stored, is acknowledged as superseded and never overwrites the vector.
func TestStaleVersionNeverOverwrites(t *testing.T) {
	t.Parallel()
	o := options{}
	b := setup(t, o)
	b.produce("stale", map[string][]byte{"a.txt": []byte("the first version of the text")})
	var v1 []byte
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT job FROM ingest_manifest`).Scan(&v1); err != nil {
		t.Fatal(err)
	}
	// Store v1, then v2.
	b.startConsumer(o)
	b.waitSettled(30 * time.Second)
	b.produce("stale", map[string][]byte{"a.txt": []byte("the second version, rewritten")})
	b.waitSettled(30 * time.Second)
	// Now the old job turns up again, as after a redrive or a slow replica.
	if _, err := b.js.Publish(context.Background(), "ingest.chunks.stale", v1); err != nil {
		t.Fatal(err)
	}
	b.eventually(10*time.Second, "the stale job to be settled", func() bool {
		v, _ := b.metricValue("sluice_pipeline_jobs_total", "superseded")
		return v >= 1
	})
	var version int
	var text string
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT version, text FROM chunk_embeddings`).Scan(&version, &text); err != nil {
		t.Fatal(err)
	}
	if version != 2 || !strings.Contains(text, "second version") {
		t.Fatalf("stored version %d %q; the stale job overwrote the newer vector", version, text)
	}
}
