package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/console"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The principals of every test.
const (
	operatorName   = "ops-alice"
	operatorSecret = "operator-secret-0123456789"
	viewerName     = "viewer-bob"
	viewerSecret   = "viewer-secret-0123456789"
	// escalatedText is the chunk text a compliance rule matched: it must
	// never appear in any response or log line.
	escalatedText = "SECRET-PAN-4111-1111-1111-1111"
	// needle is unique payload text of one alpha dead letter.
	needle = "needle-42-haystack"
)

// Fixture sizes: alphaReady spans more than one list page.
const (
	alphaReady  = 120
	alphaStored = 10
	betaBad     = 30
	pageSize    = 50
)

// testBundle is one console over a seeded database and a private NATS.
type testBundle struct {
	db      *testenv.Database
	js      jetstream.JetStream
	console *console.Server
	srv     *httptest.Server
	bodies  *recorder
	log     *testenv.Buffer
	escID   string
	alphaID string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with the console's configuration changed by adjust.
func setupWith(t *testing.T, adjust func(*console.Config)) *testBundle {
	t.Helper()
	b := &testBundle{db: testenv.NewDatabase(t), bodies: &recorder{}, log: &testenv.Buffer{}}
	// The console connects as its own NATS user, as `sluice console` does
	// in the shipped deployment.
	n, _ := testenv.NewJetStream(t, broker.Topology{})
	nc, js, err := broker.Connect(n.ConnConfig(natsauth.Console, "console-test"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b.js = js
	b.seed(t)
	log := zerolog.New(b.log)
	cfg := console.Config{
		Addr: "127.0.0.1:0", PageSize: pageSize, Log: &log, Refresh: 500 * time.Millisecond,
		Tokens: []console.Token{
			{Principal: operatorName, Role: console.Operator, Secret: operatorSecret},
			{Principal: viewerName, Role: console.Viewer, Secret: viewerSecret},
		},
	}
	if adjust != nil {
		adjust(&cfg)
	}
	// And to PostgreSQL as its own role.
	pool, err := pgxpool.New(context.Background(), b.db.RoleURL(migrations.ConsoleRole))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if b.console, err = console.New(cfg, pool, js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.console.Close)
	b.srv = httptest.NewServer(b.bodies.wrap(b.console.Handler()))
	t.Cleanup(b.srv.Close)
	return b
}

// seed writes the fixture: alpha's transient failures (some already
// stored with the same content), beta's bad requests with searchable
// details, one escalation holding a secret, and a running ingest run.
func (b *testBundle) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	batch := &pgx.Batch{}
	outbox := 0
	add := func(source, class, disposition, detail, text string, i int, ago time.Duration, retry *time.Time) string {
		outbox++
		native := fmt.Sprintf("%s/doc-%03d.md", source, i)
		docID := messages.DocID(source, native)
		hash, err := messages.ContentHash(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: docID, ChunkIndex: 0, DocVersion: 1, ChunkCount: 1,
			SourceID: source, SourceNativeID: native, RunID: "run-" + source, ContentHash: hash, Text: text, PublishedAt: now}
		payload, err := job.Encode()
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("dl-%s-%03d", source, i)
		batch.Queue(`
			INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id,
			    disposition, error_class, error_detail, stage, attempts, payload, last_outbox_id, first_failed_at, last_failed_at, next_retry_at)
			VALUES ($1, $2, 0, 1, $3, $4, $5, $6, $7, $8, 'embed', $9, $10, $11, $12, $12, $13)`,
			id, docID, source, native, "run-"+source, disposition, class, detail, 1+i%6, payload, outbox, now.Add(-ago), retry)
		if source == "alpha" && i < alphaStored {
			batch.Queue(`INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
				VALUES ($1, $2, $3, 1, $4, 1, 'failed')`, docID, source, native, hash)
			batch.Queue(`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
				VALUES ($1, 0, 1, $2, 'parked', $3)`, docID, hash, payload)
			batch.Queue(`INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
				VALUES ($1, 0, 1, $2, 'sim', 384, array_fill(0.1::real, ARRAY[384]), $3)`, docID, hash, text)
		}
		return id
	}
	due := now.Add(-time.Minute)
	for i := range alphaReady {
		text := fmt.Sprintf("alpha chunk number %d", i)
		if i == 42 {
			text = "alpha text with " + needle
		}
		id := add("alpha", "transient_exhausted", messages.DispositionRetry, "HTTP 503 from the embedder: upstream unavailable", text, i, time.Duration(i)*time.Minute, &due)
		if i == 42 {
			b.alphaID = id
		}
	}
	for i := range betaBad {
		detail := "HTTP 400: input contains an unsupported token"
		if i%2 == 1 {
			detail = "HTTP 413: request too large for the model"
		}
		add("beta", "bad_request", messages.DispositionQuarantine, detail, fmt.Sprintf("beta chunk %d", i), i, time.Duration(i)*7*time.Minute, nil)
	}
	b.escID = add("beta", "policy_secret", messages.DispositionEscalate, "rule card_number matched (pattern pan-16)",
		"customer card "+escalatedText, 99, 5*time.Minute, nil)
	batch.Queue(`INSERT INTO ingest_runs (run_id, source_id, status, documents, published, stored, parked)
		VALUES ('run-alpha', 'alpha', 'running', 400, 400, 270, 120), ('run-beta', 'beta', 'completed_with_failures', 100, 100, 69, 31)`)
	if err := b.db.Pool.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatalf("seed: %v", err)
	}
}

// get fetches path with a bearer secret ("" for none).
func (b *testBundle) get(t *testing.T, path, secret string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	return do(t, req)
}

// post posts form to path with a bearer secret ("" for none).
func (b *testBundle) post(t *testing.T, path, secret string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.String()
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// assertNoSecret fails if the escalated text reached any response body
// or the log.
func (b *testBundle) assertNoSecret(t *testing.T) {
	t.Helper()
	n, leaked := b.bodies.search(escalatedText)
	if n == 0 {
		t.Fatal("no response bodies were recorded")
	}
	if leaked != "" {
		t.Errorf("the escalated chunk's text appeared in the response to %s", leaked)
	}
	if strings.Contains(b.log.String(), escalatedText) || strings.Contains(b.log.String(), needle) {
		t.Errorf("payload text appeared in the log:\n%s", b.log.String())
	}
}

// recorder keeps every response body the console sent.
type recorder struct {
	mu     sync.Mutex
	bodies []recorded
}

type recorded struct {
	req  string
	body []byte
}

func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.bodies = append(rc.bodies, recorded{req: r.Method + " " + r.URL.String(), body: tw.buf.Bytes()})
	})
}

// search returns how many bodies were recorded and the first request
// whose response contains s.
func (rc *recorder) search(s string) (int, string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range rc.bodies {
		if bytes.Contains(b.body, []byte(s)) {
			return len(rc.bodies), b.req
		}
	}
	return len(rc.bodies), ""
}

type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}
