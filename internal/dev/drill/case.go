package drill

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/simtype"
	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// dcase is one drill document: its embed-sim marker and what must come of
// it.
type dcase struct {
	name, marker string
	check        func(o outcome) []Check
}

func cases() []dcase {
	return []dcase{
		{"transient", simtype.DrillTransientMarker, checkTransient},
		{"not-found", simtype.DrillNotFoundMarker, checkQuarantined(classify.ClassNotFound, 404)},
		{"too-long", simtype.DrillTooLongMarker, checkQuarantined(classify.ClassContextLength, 400)},
	}
}

// outcome is what became of one drill document.
type outcome struct {
	status            manifest.Status
	class             string
	attempts, vectors int
	deadLetter        *deadLetter
	requests          []simtype.RequestRecord
	// text is what the drill ingested; job is the manifest's bytes of
	// the job published for it.
	text string
	job  []byte
	err  error
}

type deadLetter struct {
	disposition, class string
	attempts           int
	resolved           bool
	payload            []byte
}

func runCase(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, sim *simClient, cfg Config, dir, runTag string, c dcase) CaseReport {
	r := CaseReport{Name: c.name, Marker: c.marker}
	text := fmt.Sprintf("Fault drill %s, case %s: %s. The sluice gate opens at dawn.", runTag, c.name, c.marker)
	// A document of its own per run: a dead letter accumulates attempts
	// per document, so reusing one would blur the next drill's counts.
	runID, err := ingest(ctx, pool, js, cfg.Source, dir, c.name+"-"+runTag, text)
	if err != nil {
		r.Checks = []Check{{Name: "ingested", Detail: err.Error()}}
		return r
	}
	r.RunID = runID
	o := await(ctx, pool, cfg.Timeout, runID)
	if o.err == nil {
		o.requests, o.err = sim.requestsCarrying(ctx, sha(text))
	}
	if o.err != nil {
		r.Checks = []Check{{Name: "settled", Detail: o.err.Error()}}
		return r
	}
	o.text = text
	r.Checks = c.check(o)
	return r
}

func sha(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// await polls until the run's chunk is stored, or parked and triaged.
func await(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, runID string) outcome {
	deadline := time.Now().Add(timeout)
	for {
		o, done := read(ctx, pool, runID)
		if done || o.err != nil {
			return o
		}
		if time.Now().After(deadline) {
			o.err = fmt.Errorf("no outcome after %s: the chunk is %q; are the consumer, outbox-relay and dlq-replayer (triage) running?", timeout, o.status)
			return o
		}
		if !wait.Sleep(ctx, pollEvery, nil) {
			o.err = ctx.Err()
			return o
		}
	}
}

// pollEvery spaces the reads of a document's outcome.
const pollEvery = 200 * time.Millisecond

// read reads the outcome so far; done is true once it is final.
func read(ctx context.Context, pool *pgxpool.Pool, runID string) (outcome, bool) {
	var o outcome
	var docID string
	err := pool.QueryRow(ctx, `
		SELECT m.doc_id, m.status, m.attempts, coalesce(m.last_error_class, ''), m.job,
		       (SELECT count(*) FROM chunk_embeddings e WHERE e.doc_id = m.doc_id)
		FROM ingest_manifest m WHERE m.run_id = $1`, runID).Scan(&docID, &o.status, &o.attempts, &o.class, &o.job, &o.vectors)
	if err != nil {
		o.err = fmt.Errorf("read the drill chunk's manifest row: %w", err)
		return o, false
	}
	var dl deadLetter
	err = pool.QueryRow(ctx, `SELECT disposition, error_class, attempts, resolved_at IS NOT NULL, payload FROM dead_letters WHERE doc_id = $1`, docID).
		Scan(&dl.disposition, &dl.class, &dl.attempts, &dl.resolved, &dl.payload)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		o.err = fmt.Errorf("read the drill chunk's dead letter: %w", err)
		return o, false
	default:
		o.deadLetter = &dl
	}
	return o, o.status == manifest.Stored || (o.status == manifest.Parked && o.deadLetter != nil)
}

// scripted splits the requests into those the drill's script decided (or
// that succeeded) and the noise: requests a random fault of the running
// embed-sim (a 429, a 5xx, a hang, a reset, an outage) decided instead.
func scripted(reqs []simtype.RequestRecord) (script []simtype.RequestRecord, noise int) {
	for _, r := range reqs {
		switch r.Fault {
		case "", "sequence", "context_length":
			script = append(script, r)
		default:
			noise++
		}
	}
	return script, noise
}

// statuses lists the HTTP statuses embed-sim answered, in order.
func statuses(reqs []simtype.RequestRecord) []int {
	out := make([]int, len(reqs))
	for i, r := range reqs {
		out[i] = r.Status
	}
	return out
}

func checkTransient(o outcome) []Check {
	script, noise := scripted(o.requests)
	got := statuses(script)
	var gaps []string
	spaced := len(o.requests) > 1
	for i := 1; i < len(o.requests); i++ {
		gap := o.requests[i].Time.Sub(o.requests[i-1].Time)
		gaps = append(gaps, gap.Round(time.Millisecond).String())
		spaced = spaced && gap > 0
	}
	return []Check{
		check("stored once", o.status == manifest.Stored && o.vectors == 1,
			"manifest %s, %d vectors", o.status, o.vectors),
		check("three retries, then success", slices.Equal(got, []int{503, 503, 503, 200}),
			"embed-sim answered %v%s", got, noiseNote(noise)),
		check("retries waited for their backoff", spaced,
			"gaps between requests %s (full jitter: each is drawn below a doubling ceiling)", strings.Join(gaps, ", ")),
		check("no open dead letter", o.deadLetter == nil || o.deadLetter.resolved,
			"dead letter %v", o.deadLetter != nil),
	}
}

func noiseNote(noise int) string {
	if noise == 0 {
		return ""
	}
	return fmt.Sprintf(", besides %d random fault(s) of the running embed-sim", noise)
}

func checkQuarantined(class string, code int) func(o outcome) []Check {
	return func(o outcome) []Check {
		script, noise := scripted(o.requests)
		got := statuses(script)
		dl := deadLetter{}
		if o.deadLetter != nil {
			dl = *o.deadLetter
		}
		// A random fault on the way costs a delivery of its own; the
		// scripted rejection itself must cost exactly one.
		return []Check{
			check("quarantined", o.status == manifest.Parked && dl.disposition == messages.DispositionQuarantine && !dl.resolved,
				"manifest %s, dead letter %q", o.status, dl.disposition),
			check("after one attempt", o.attempts >= 1 && o.attempts <= 1+noise && dl.attempts == o.attempts,
				"manifest attempts %d, dead letter attempts %d%s", o.attempts, dl.attempts, noiseNote(noise)),
			check("with its class", o.class == class && dl.class == class,
				"class %q (want %s)", dl.class, class),
			payloadIntact(o, dl),
			check(fmt.Sprintf("embed-sim answered %d", code), len(got) > 0 && !slices.ContainsFunc(got, func(s int) bool { return s != code }),
				"embed-sim answered %v%s", got, noiseNote(noise)),
			check("nothing stored", o.vectors == 0, "%d vectors", o.vectors),
		}
	}
}

// payloadIntact checks that the quarantined chunk's dead letter holds the
// job exactly as it was published: the same bytes the manifest recorded,
// decoding to the drill's own text under a content hash that still
// matches it. A dead letter that re-encoded, trimmed or lost its payload
// could not be replayed verbatim.
func payloadIntact(o outcome, dl deadLetter) Check {
	job, err := messages.DecodeChunkJob(dl.payload)
	switch {
	case len(dl.payload) == 0:
		return check("raw payload intact", false, "the dead letter holds no payload")
	case err != nil:
		return check("raw payload intact", false, "the dead letter's payload is not a chunk job: %v", err)
	case len(o.job) > 0 && !bytes.Equal(dl.payload, o.job):
		return check("raw payload intact", false, "the dead letter's payload (%d bytes) differs from the job published (%d bytes)", len(dl.payload), len(o.job))
	}
	hash, herr := messages.ContentHash(job.Text, job.Metadata)
	return check("raw payload intact", job.Text == o.text && herr == nil && hash == job.ContentHash,
		"%d bytes, the drill's text and content hash %s", len(dl.payload), job.ContentHash)
}
