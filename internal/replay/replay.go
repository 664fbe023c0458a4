package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dlq"
	"github.com/sluicehq/sluice/pkg/messages"
)

// MaxLimit caps Scope.Limit: one replay marks and publishes at most this
// many dead letters; run it again for the rest.
const MaxLimit = 10000

// ErrScope is returned for a scope a replay must not take: too broad, or
// a limit out of range.
var ErrScope = errors.New("replay scope")

// Scope is what a replay selects: a filter and a cap. Among the matches,
// only unresolved dead letters with a payload that were not replayed since
// they last failed are taken, oldest failure first.
type Scope struct {
	Filter
	// Limit caps the selection, 1..MaxLimit.
	Limit int `json:"limit"`
}

// Validate says how to fix a scope a replay must not take.
func (s Scope) Validate() error {
	if err := s.Filter.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrScope, err)
	}
	if !s.Narrow() {
		return fmt.Errorf("%w: name at least a source, an error class, a run or a start time: replays are never everything", ErrScope)
	}
	if s.Limit < 1 || s.Limit > MaxLimit {
		return fmt.Errorf("%w: limit %d: want 1..%d", ErrScope, s.Limit, MaxLimit)
	}
	return nil
}

// Preview is the report of a replay, dry or executed.
type Preview struct {
	// ReplayID names the replay_audit row of an executed replay.
	ReplayID string `json:"replay_id,omitempty"`
	// DryRun is true when nothing was marked or dispatched.
	DryRun bool `json:"dry_run"`
	// Scope is what was asked for.
	Scope Scope `json:"scope"`
	// Selected is how many dead letters the replay takes (at most Limit).
	Selected int `json:"selected"`
	// ByClass and BySource split Selected.
	ByClass  map[string]int `json:"by_error_class"`
	BySource map[string]int `json:"by_source"`
	// AlreadyStored counts those whose chunk already has a vector with the
	// same content hash: replaying them changes nothing.
	AlreadyStored int `json:"already_have_vector"`
	// NotReplayable counts those whose payload is not a chunk job.
	NotReplayable int `json:"not_replayable"`
	// Dispatched counts the jobs JetStream acknowledged.
	Dispatched int `json:"dispatched"`
}

// candidate is one dead letter a replay selected.
type candidate struct {
	id, docID, source, class string
	index, gen               int
	payload                  []byte
	hasVector                bool
}

type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// selectCandidates reads the dead letters in scope that are unresolved and
// not replayed since they last failed. With lock, it locks them (SKIP
// LOCKED, so concurrent replays never select the same row).
func selectCandidates(ctx context.Context, q querier, s Scope, lock bool) ([]candidate, error) {
	var args Args
	sql := `
		SELECT d.dead_letter_id, d.doc_id, d.chunk_index, d.source_id, d.error_class, d.replay_gen, d.payload,
		       EXISTS (SELECT 1 FROM chunk_embeddings e JOIN ingest_manifest m USING (doc_id, chunk_index)
		               WHERE e.doc_id = d.doc_id AND e.chunk_index = d.chunk_index AND e.content_hash = m.content_hash)
		FROM dead_letters d
		WHERE d.resolved_at IS NULL AND d.payload IS NOT NULL
		  AND (d.replayed_at IS NULL OR d.replayed_at < d.last_failed_at)
		  AND ` + s.Where(&args) + `
		ORDER BY d.last_failed_at, d.dead_letter_id
		LIMIT ` + args.Add(s.Limit)
	if lock {
		sql += ` FOR UPDATE OF d SKIP LOCKED`
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("select dead letters: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
		var c candidate
		err := r.Scan(&c.id, &c.docID, &c.index, &c.source, &c.class, &c.gen, &c.payload, &c.hasVector)
		return c, err
	})
}

func summarize(s Scope, cands []candidate) *Preview {
	p := &Preview{DryRun: true, Scope: s, Selected: len(cands), ByClass: map[string]int{}, BySource: map[string]int{}}
	for _, c := range cands {
		p.ByClass[c.class]++
		p.BySource[c.source]++
		if c.hasVector {
			p.AlreadyStored++
		}
		if _, err := messages.DecodeChunkJob(c.payload); err != nil {
			p.NotReplayable++
		}
	}
	return p
}

// DryRun counts what a replay of s would take, changing nothing.
func DryRun(ctx context.Context, pool *pgxpool.Pool, s Scope) (*Preview, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cands, err := selectCandidates(ctx, pool, s, false)
	if err != nil {
		return nil, err
	}
	return summarize(s, cands), nil
}

// Execute replays s: it marks the selected dead letters and records the
// audit row (reason, requestedBy) in one transaction, before anything is
// dispatched, so that running the same replay again selects nothing; then
// it publishes the replay jobs to ingest.replay.<source> through js. Rows
// whose dispatch failed are unmarked so that a later replay can pick them
// up; the error then says how many were sent. It returns ErrScope for a
// scope that fails Validate.
func Execute(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, s Scope, reason, requestedBy string) (*Preview, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if reason == "" {
		return nil, fmt.Errorf("%w: a replay needs a reason, for the audit trail", ErrScope)
	}
	replayID := newReplayID()
	var preview *Preview
	var jobs []job
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		cands, err := selectCandidates(ctx, tx, s, true)
		if err != nil {
			return err
		}
		preview = summarize(s, cands)
		preview.DryRun, preview.ReplayID = false, replayID
		var ids []string
		for _, c := range cands {
			raw, err := dlq.ReplayJob(messages.DeadLetter{DeadLetterID: c.id, ReplayGen: c.gen, Payload: c.payload}, replayID)
			if err != nil {
				continue
			}
			jobs = append(jobs, job{id: c.id, source: c.source, msgID: messages.ReplayMsgID(c.id, c.gen+1), raw: raw})
			ids = append(ids, c.id)
		}
		scopeJSON, _ := json.Marshal(s)
		if _, err := tx.Exec(ctx, `
			INSERT INTO replay_audit (replay_id, action, requested_by, reason, scope, dry_run, selected, already_stored)
			VALUES ($1, 'replay', NULLIF($2, ''), $3, $4, false, $5, $6)`,
			replayID, requestedBy, reason, scopeJSON, len(cands), preview.AlreadyStored); err != nil {
			return fmt.Errorf("record replay: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE dead_letters SET replayed_at = now(), replay_id = $1 WHERE dead_letter_id = ANY($2)`, replayID, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	dispatched, failed, derr := dispatch(ctx, js, jobs)
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

func newReplayID() string {
	return newID("rp")
}

func newID(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}
