package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/dlq"
	"github.com/sluicehq/sluice/pkg/messages"
)

// replayScope is what an operator replay selects. At least one of Source,
// ErrorClass, Run and Since must be set: replays are never "everything".
type replayScope struct {
	Source     string    `json:"source,omitempty"`
	ErrorClass string    `json:"error_class,omitempty"`
	Run        string    `json:"run,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	Until      time.Time `json:"until,omitzero"`
	Limit      int       `json:"limit"`
}

type replayCandidate struct {
	ID, DocID, Source, Class string
	Index, Gen               int
	Payload                  []byte
	HasVector                bool
}

// replayPreview is the report of a replay, dry or executed.
type replayPreview struct {
	ReplayID      string         `json:"replay_id,omitempty"`
	DryRun        bool           `json:"dry_run"`
	Scope         replayScope    `json:"scope"`
	Selected      int            `json:"selected"`
	ByClass       map[string]int `json:"by_error_class"`
	BySource      map[string]int `json:"by_source"`
	AlreadyStored int            `json:"already_have_vector"`
	NotReplayable int            `json:"not_replayable"`
	Dispatched    int            `json:"dispatched"`
}

func runDLQReplay(ctx context.Context, env Env, args []string) error {
	var c conn
	var scope replayScope
	var since, until, reason string
	var execute bool
	l := newLoader(env, "dlq replay", &c, true)
	l.String(&scope.Source, "source", "", "", "replay dead letters of this source")
	l.String(&scope.ErrorClass, "error-class", "", "", "replay dead letters of this error class")
	l.String(&scope.Run, "run", "", "", "replay dead letters of this ingest run")
	l.String(&since, "since", "", "", "failed at or after: RFC 3339 time, or a duration ago (24h)")
	l.String(&until, "until", "", "", "failed before: RFC 3339 time, or a duration ago")
	l.Int(&scope.Limit, "limit", "", 500, "replay at most this many")
	l.String(&reason, "reason", "", "", "why (recorded in replay_audit; required with --execute)")
	l.Bool(&execute, "execute", "", false, "dispatch the replay; without it, only preview")
	if _, err := parse(l, args); err != nil {
		return err
	}
	var err error
	if scope.Since, err = parseWhen(since, time.Now()); err != nil {
		return usageErr("--since: %v", err)
	}
	if scope.Until, err = parseWhen(until, time.Now()); err != nil {
		return usageErr("--until: %v", err)
	}
	if scope.Source == "" && scope.ErrorClass == "" && scope.Run == "" && scope.Since.IsZero() {
		return usageErr("name a scope: at least one of --source, --error-class, --run, --since")
	}
	if scope.Limit < 1 {
		return usageErr("--limit must be at least 1")
	}
	if execute && reason == "" {
		return usageErr("--execute needs --reason: say why, for the audit trail")
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	var preview *replayPreview
	if execute {
		preview, err = executeReplay(ctx, pool, c.NATSURL, scope, reason)
	} else {
		preview, err = previewReplay(ctx, pool, scope)
	}
	if preview != nil {
		if c.JSON {
			_ = printJSON(env.Stdout, preview)
		} else {
			printPreview(env, preview)
		}
	}
	return err
}

// parseWhen reads an RFC 3339 time or a duration meaning "that long ago".
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor a duration (24h)", s)
}

// selectCandidates reads the dead letters in scope that are unresolved and
// not replayed since they last failed. With lock, it locks them (SKIP
// LOCKED, so concurrent replays never select the same row).
func selectCandidates(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, scope replayScope, lock bool) ([]replayCandidate, error) {
	sql := `
		SELECT d.dead_letter_id, d.doc_id, d.chunk_index, d.source_id, d.error_class, d.replay_gen, d.payload,
		       EXISTS (SELECT 1 FROM chunk_embeddings e JOIN ingest_manifest m USING (doc_id, chunk_index)
		               WHERE e.doc_id = d.doc_id AND e.chunk_index = d.chunk_index AND e.content_hash = m.content_hash)
		FROM dead_letters d
		WHERE d.resolved_at IS NULL AND d.payload IS NOT NULL
		  AND (d.replayed_at IS NULL OR d.replayed_at < d.last_failed_at)
		  AND ($1 = '' OR d.source_id = $1) AND ($2 = '' OR d.error_class = $2) AND ($3 = '' OR d.run_id = $3)
		  AND ($4::timestamptz IS NULL OR d.last_failed_at >= $4) AND ($5::timestamptz IS NULL OR d.last_failed_at < $5)
		ORDER BY d.last_failed_at, d.dead_letter_id
		LIMIT $6`
	if lock {
		sql += ` FOR UPDATE OF d SKIP LOCKED`
	}
	rows, err := q.Query(ctx, sql, scope.Source, scope.ErrorClass, scope.Run, nullTime(scope.Since), nullTime(scope.Until), scope.Limit)
	if err != nil {
		return nil, fmt.Errorf("select dead letters: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (replayCandidate, error) {
		var c replayCandidate
		err := r.Scan(&c.ID, &c.DocID, &c.Index, &c.Source, &c.Class, &c.Gen, &c.Payload, &c.HasVector)
		return c, err
	})
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func summarize(scope replayScope, cands []replayCandidate) *replayPreview {
	p := &replayPreview{DryRun: true, Scope: scope, Selected: len(cands), ByClass: map[string]int{}, BySource: map[string]int{}}
	for _, c := range cands {
		p.ByClass[c.Class]++
		p.BySource[c.Source]++
		if c.HasVector {
			p.AlreadyStored++
		}
		if _, err := messages.DecodeChunkJob(c.Payload); err != nil {
			p.NotReplayable++
		}
	}
	return p
}

func previewReplay(ctx context.Context, pool *pgxpool.Pool, scope replayScope) (*replayPreview, error) {
	cands, err := selectCandidates(ctx, pool, scope, false)
	if err != nil {
		return nil, err
	}
	return summarize(scope, cands), nil
}

// executeReplay marks the selected dead letters and records the audit row
// in one transaction, before anything is dispatched, so that running the
// same replay again selects nothing; then it publishes the replay jobs.
// Rows whose dispatch failed are unmarked so that a later replay can
// pick them up.
func executeReplay(ctx context.Context, pool *pgxpool.Pool, natsURL string, scope replayScope, reason string) (*replayPreview, error) {
	replayID := newReplayID()
	var preview *replayPreview
	var jobs []replayJob
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		cands, err := selectCandidates(ctx, tx, scope, true)
		if err != nil {
			return err
		}
		preview = summarize(scope, cands)
		preview.DryRun, preview.ReplayID = false, replayID
		var ids []string
		for _, c := range cands {
			raw, err := dlq.ReplayJob(messages.DeadLetter{DeadLetterID: c.ID, ReplayGen: c.Gen, Payload: c.Payload}, replayID)
			if err != nil {
				continue
			}
			jobs = append(jobs, replayJob{id: c.ID, source: c.Source, msgID: messages.ReplayMsgID(c.ID, c.Gen+1), raw: raw})
			ids = append(ids, c.ID)
		}
		scopeJSON, _ := json.Marshal(scope)
		if _, err := tx.Exec(ctx, `INSERT INTO replay_audit (replay_id, reason, scope, dry_run, selected) VALUES ($1, $2, $3, false, $4)`,
			replayID, reason, scopeJSON, len(cands)); err != nil {
			return fmt.Errorf("record replay: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE dead_letters SET replayed_at = now(), replay_id = $1 WHERE dead_letter_id = ANY($2)`, replayID, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	dispatched, failed, derr := dispatch(ctx, natsURL, jobs)
	preview.Dispatched = len(dispatched)
	if len(failed) > 0 {
		if _, err := pool.Exec(context.WithoutCancel(ctx),
			`UPDATE dead_letters SET replayed_at = NULL, replay_id = NULL WHERE replay_id = $1 AND dead_letter_id = ANY($2)`,
			replayID, failed); err != nil {
			derr = errors.Join(derr, err)
		}
	}
	if _, err := pool.Exec(context.WithoutCancel(ctx), `UPDATE replay_audit SET dispatched = $2 WHERE replay_id = $1`, replayID, len(dispatched)); err != nil {
		derr = errors.Join(derr, err)
	}
	if derr != nil {
		return preview, fmt.Errorf("dispatched %d of %d (the rest are unmarked; run the replay again): %w", len(dispatched), len(jobs), derr)
	}
	return preview, nil
}

type replayJob struct {
	id, source, msgID string
	raw               []byte
}

// dispatch publishes replay jobs to ingest.replay.<source> and waits for
// every PubAck. It returns the dead letter ids dispatched and failed.
func dispatch(ctx context.Context, natsURL string, jobs []replayJob) (ok, failed []string, err error) {
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	nc, js, err := broker.Connect(broker.ConnConfig{URL: natsURL, Name: "sluice-cli"}, zerolog.Nop())
	if err != nil {
		return nil, ids(jobs), err
	}
	defer nc.Close()
	if err := broker.EnsureExists(ctx, js, broker.Topology{}); err != nil {
		return nil, ids(jobs), err
	}
	futures := make([]jetstream.PubAckFuture, len(jobs))
	var errs []error
	for i, j := range jobs {
		msg := &nats.Msg{Subject: messages.ReplaySubject(j.source), Data: j.raw, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, j.msgID)
		if futures[i], err = js.PublishMsgAsync(msg); err != nil {
			errs = append(errs, err)
		}
	}
	for i, f := range futures {
		if f == nil {
			failed = append(failed, jobs[i].id)
			continue
		}
		select {
		case <-f.Ok():
			ok = append(ok, jobs[i].id)
		case err := <-f.Err():
			errs = append(errs, err)
			failed = append(failed, jobs[i].id)
		case <-ctx.Done():
			return ok, append(failed, ids(jobs[i:])...), ctx.Err()
		}
	}
	return ok, failed, errors.Join(errs...)
}

func ids(jobs []replayJob) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.id
	}
	return out
}

func newReplayID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "rp-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func printPreview(env Env, p *replayPreview) {
	w := env.Stdout
	if p.DryRun {
		fmt.Fprintln(w, "DRY RUN: nothing was changed or dispatched; add --execute --reason \"...\" to replay.")
	} else {
		fmt.Fprintf(w, "replay %s\n", p.ReplayID)
	}
	fmt.Fprintf(w, "selected %d (limit %d); %d already have a vector with the same content; %d cannot be replayed (no job payload)\n",
		p.Selected, p.Scope.Limit, p.AlreadyStored, p.NotReplayable)
	printCounts(w, "error class", p.ByClass)
	printCounts(w, "source", p.BySource)
	if !p.DryRun {
		fmt.Fprintf(w, "dispatched %d to ingest.replay.*\n", p.Dispatched)
	}
}

func printCounts(w interface{ Write([]byte) (int, error) }, title string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-12s %-28s %d\n", title, k, m[k])
	}
}

func runDLQPause(ctx context.Context, env Env, args []string) error {
	return pauseReplay(ctx, env, args, true)
}

func runDLQResume(ctx context.Context, env Env, args []string) error {
	return pauseReplay(ctx, env, args, false)
}

// pauseReplay pauses or resumes the INGEST "replay" durable; live
// ingestion ("workers") is untouched.
func pauseReplay(ctx context.Context, env Env, args []string, pause bool) error {
	var c conn
	var dur time.Duration
	name := "dlq resume"
	if pause {
		name = "dlq pause"
	}
	l := newLoader(env, name, &c, true)
	if pause {
		l.Duration(&dur, "for", "", 0, "pause for this long (default: until resumed)")
	}
	if _, err := parse(l, args); err != nil {
		return err
	}
	nc, js, err := broker.Connect(broker.ConnConfig{URL: c.NATSURL, Name: "sluice-cli"}, zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	if !pause {
		if _, err := js.ResumeConsumer(ctx, broker.IngestStream, broker.ReplayConsumer); err != nil {
			return fmt.Errorf("resume replay durable: %w", err)
		}
		fmt.Fprintln(env.Stderr, "replay durable resumed")
		return nil
	}
	until := time.Now().AddDate(100, 0, 0)
	if dur > 0 {
		until = time.Now().Add(dur)
	}
	if _, err := js.PauseConsumer(ctx, broker.IngestStream, broker.ReplayConsumer, until); err != nil {
		return fmt.Errorf("pause replay durable: %w", err)
	}
	fmt.Fprintf(env.Stderr, "replay durable paused until %s\n", until.UTC().Format(time.RFC3339))
	return nil
}
