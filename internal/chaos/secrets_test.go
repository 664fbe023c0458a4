package chaos_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/broker"
)

// A 4096-bit RSA private key spanning several chunks never reaches the
// embedder, not one line of it: the producer screens the whole document
// and escalates every chunk the key touches. Neither the key nor its body
// is in chunk_embeddings, ingest_manifest.job, the DLQ stream or any
// service's log; the text is kept once, in escalated_chunks.
func TestSplitPrivateKeyNeverLeaves(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 4096)
	if err != nil {
		t.Fatal(err)
	}
	block := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	lines := strings.Split(strings.TrimSpace(block), "\n")
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	f := newFleet(t, fleetOptions{sim: []string{"--request-log", requests}})
	f.services()
	corpus := filepath.Join(f.dir, "leaky")
	writeFile(t, filepath.Join(corpus, "notes.txt"),
		strings.Repeat("Deployment notes for the river gate service. ", 10)+"\n\n"+block+"\n\n"+
			strings.Repeat("After the key, more notes about the water level. ", 10))
	f.runProducer("leaky", corpus)
	f.converge(2*time.Minute, 1)

	if n := f.count(`SELECT count(*) FROM dead_letters WHERE disposition = 'escalate'`); n < 2 {
		t.Fatalf("%d chunks escalated; the key spans several", n)
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings`); n == 0 {
		t.Error("the clean chunks around the key were not stored")
	}
	body := lines[1 : len(lines)-1]
	leaks := func(where, text string) {
		for _, l := range append(body, "PRIVATE KEY") {
			if strings.Contains(text, l) {
				t.Errorf("%s holds part of the key: %q", where, l[:min(20, len(l))])
				return
			}
		}
	}
	sent, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	leaks("embed-sim's request log", string(sent))
	for _, q := range []string{
		`SELECT coalesce(string_agg(text, ' '), '') FROM chunk_embeddings`,
		`SELECT coalesce(string_agg(convert_from(job, 'UTF8'), ' '), '') FROM ingest_manifest`,
		`SELECT coalesce(string_agg(payload::text, ' '), '') FROM outbox`,
		`SELECT coalesce(string_agg(convert_from(payload, 'UTF8'), ' '), '') FROM dead_letters`,
	} {
		var text string
		if err := f.db.Pool.QueryRow(t.Context(), q).Scan(&text); err != nil {
			t.Fatal(err)
		}
		leaks(q, text)
	}
	stream, err := f.js.Stream(t.Context(), broker.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); ; seq++ {
		msg, err := stream.GetMsg(t.Context(), seq)
		if err != nil {
			if !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatal(err)
			}
			break
		}
		leaks("the DLQ stream", string(msg.Data))
	}
	for _, p := range f.procs {
		b, _ := os.ReadFile(p.log)
		leaks(p.name+"'s log", string(b))
	}
	var kept string
	if err := f.db.Pool.QueryRow(t.Context(), `SELECT string_agg(text, '' ORDER BY chunk_index) FROM escalated_chunks`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kept, body[len(body)/2]) {
		t.Error("escalated_chunks does not keep the withheld text")
	}
}
