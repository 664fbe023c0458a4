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

	"github.com/sluicehq/sluice/internal/platform/broker"
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
	f.assertNowhere(requests, append(body, "PRIVATE KEY")...)
	var kept string
	if err := f.db.Pool.QueryRow(t.Context(), `SELECT string_agg(text, '' ORDER BY chunk_index) FROM escalated_chunks`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kept, body[len(body)/2]) {
		t.Error("escalated_chunks does not keep the withheld text")
	}
}

// assertNowhere fails the test if any of needles is in embed-sim's
// request log, chunk_embeddings, ingest_manifest.job, the outbox,
// dead_letters.payload, dead_letter_payloads, the DLQ stream or any
// service's log.
func (f *fleet) assertNowhere(requests string, needles ...string) {
	t := f.t
	t.Helper()
	leaks := func(where, text string) {
		for _, l := range needles {
			if strings.Contains(text, l) {
				t.Errorf("%s holds %q", where, l[:min(20, len(l))])
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
		`SELECT coalesce(string_agg(text || ' ' || metadata::text, ' '), '') FROM chunk_embeddings`,
		`SELECT coalesce(string_agg(convert_from(job, 'UTF8'), ' '), '') FROM ingest_manifest`,
		`SELECT coalesce(string_agg(payload::text, ' '), '') FROM outbox`,
		`SELECT coalesce(string_agg(convert_from(payload, 'UTF8'), ' '), '') FROM dead_letters`,
		`SELECT coalesce(string_agg(convert_from(payload, 'UTF8'), ' '), '') FROM dead_letter_payloads`,
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
}

// An escalation the consumer catches — a POLICY_RULES pattern the
// producer's scanner lacks, the same pattern in a chunk's metadata, and a
// source off POLICY_ALLOW_SOURCES — is redacted as the producer's are:
// the text is nowhere but escalated_chunks, and the dead letter carries
// the redacted job.
func TestConsumerEscalationsAreRedacted(t *testing.T) {
	t.Parallel()
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	f := newFleet(t, fleetOptions{sim: []string{"--request-log", requests},
		env: []string{"POLICY_RULES=ssn=[0-9]{3}-[0-9]{2}-[0-9]{4}", "POLICY_ALLOW_SOURCES=hr"}})
	f.services()
	const inText, inMeta, offList = "123-45-6789", "987-65-4321", "XYZZY-PLANS-7"
	hr := filepath.Join(f.dir, "hr.jsonl")
	writeFile(t, hr, `{"id":"alice","text":"Alice's file. SSN `+inText+`, start date in May."}`+"\n"+
		`{"id":"bob","text":"Bob's file: nothing to hide.","metadata":{"note":"ssn `+inMeta+`"}}`+"\n"+
		`{"id":"carol","text":"Carol's file: a clean record."}`+"\n")
	f.runProducer("hr", hr)
	rogue := filepath.Join(f.dir, "rogue")
	writeFile(t, filepath.Join(rogue, "plans.txt"), "The rogue source's "+offList+" must not be embedded.")
	f.runProducer("rogue", rogue)
	f.converge(2*time.Minute, 4)

	rules := map[string]string{}
	rows, err := f.db.Pool.Query(t.Context(), `SELECT doc_id, error_code FROM dead_letters WHERE disposition = 'escalate'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var doc, rule string
		if err := rows.Scan(&doc, &rule); err != nil {
			t.Fatal(err)
		}
		rules[doc] = rule
	}
	if len(rules) != 3 {
		t.Fatalf("escalations %v; want alice's and bob's (ssn) and the rogue source's (source_not_allowed)", rules)
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings`); n != 1 {
		t.Errorf("%d chunks stored; want carol's alone", n)
	}
	f.assertNowhere(requests, inText, inMeta, offList)
	var kept string
	if err := f.db.Pool.QueryRow(t.Context(), `SELECT string_agg(text, ' ' ORDER BY doc_id) FROM escalated_chunks`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kept, inText) || !strings.Contains(kept, offList) {
		t.Errorf("escalated_chunks keeps %q; want the withheld texts", kept)
	}
	if n := f.count(`SELECT count(*) FROM dead_letters WHERE disposition = 'escalate' AND convert_from(payload, 'UTF8') LIKE '%[redacted: %'`); n != 3 {
		t.Errorf("%d escalated dead letters carry the redacted job; want 3", n)
	}
}
