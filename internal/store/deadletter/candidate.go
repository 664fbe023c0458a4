package deadletter

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AlreadyReplayedSQL is the condition, on dead_letters aliased d, that a
// dead letter was already replayed once: its current failure came from a
// replay generation (replay_gen > 0: an operator or the automatic replayer
// re-sent it and it failed again), or an operator replay marked it
// (replayed_at: in flight, or failed again since). A dispatch that failed
// and was unmarked does not count: nothing was sent.
const AlreadyReplayedSQL = "(d.replay_gen > 0 OR d.replayed_at IS NOT NULL)"

// escalatedSQL is the condition that a dead letter is an escalation:
// its disposition says so, or its chunk's text is held in
// escalated_chunks. Its payload is redacted; replaying it would embed
// the redaction and resolve a compliance case behind the alert's back.
const escalatedSQL = `(d.disposition = 'escalate' OR EXISTS (
	SELECT 1 FROM escalated_chunks x WHERE x.doc_id = d.doc_id AND x.chunk_index = d.chunk_index AND x.version = d.version))`

// eligibleSQL is the condition that a dead letter in scope may be
// selected for an operator replay, apart from AlreadyReplayedSQL:
// unresolved, not dispatched, with a payload, and not an escalation.
const eligibleSQL = `d.resolved_at IS NULL AND d.payload IS NOT NULL AND ` + notDispatched + `
	AND NOT ` + escalatedSQL

// Selection is what an operator replay takes: among the dead letters
// Filter matches, the eligible ones (eligibleSQL), never one replayed
// before unless IncludeReplayed, oldest failure first, at most Limit.
type Selection struct {
	Filter
	Limit           int
	IncludeReplayed bool
}

// where returns the selection's whole condition.
func (s Selection) where(args *Args) string {
	w := eligibleSQL + " AND " + s.Where(args)
	if !s.IncludeReplayed {
		w += " AND NOT " + AlreadyReplayedSQL
	}
	return w
}

// Candidate is one dead letter a Selection took.
type Candidate struct {
	ID, DocID, Source, ErrorClass string
	ChunkIndex, ReplayGen         int
	Payload                       []byte
	// HasVector is whether the chunk already has a vector of the content
	// hash its manifest row holds: replaying it changes nothing.
	HasVector bool
}

// Select reads the dead letters s takes. With lock, it locks them (SKIP
// LOCKED, so concurrent replays never select the same row): call it in
// the transaction that marks them.
func Select(ctx context.Context, q Reader, s Selection, lock bool) ([]Candidate, error) {
	var args Args
	sql := `
		SELECT d.dead_letter_id, d.doc_id, d.chunk_index, d.source_id, d.error_class, d.replay_gen, d.payload,
		       EXISTS (SELECT 1 FROM chunk_embeddings e JOIN ingest_manifest m USING (doc_id, chunk_index)
		               WHERE e.doc_id = d.doc_id AND e.chunk_index = d.chunk_index AND e.content_hash = m.content_hash)
		FROM dead_letters d
		WHERE ` + s.where(&args) + `
		ORDER BY d.last_failed_at, d.dead_letter_id
		LIMIT ` + args.Add(s.Limit)
	if lock {
		sql += ` FOR UPDATE OF d SKIP LOCKED`
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("select dead letters: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Candidate, error) {
		var c Candidate
		err := r.Scan(&c.ID, &c.DocID, &c.ChunkIndex, &c.Source, &c.ErrorClass, &c.ReplayGen, &c.Payload, &c.HasVector)
		return c, err
	})
}

// Excluded counts the unresolved matches of s that its eligibility
// rules leave out: escalations, and (unless IncludeReplayed) those
// replayed before and not in flight.
func Excluded(ctx context.Context, q Reader, s Selection) (escalated, replayed int, err error) {
	var args Args
	already := "false"
	if !s.IncludeReplayed {
		already = AlreadyReplayedSQL
	}
	err = q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE `+escalatedSQL+`),
		       count(*) FILTER (WHERE NOT `+escalatedSQL+` AND `+already+` AND `+notDispatched+`)
		FROM dead_letters d
		WHERE d.resolved_at IS NULL AND `+s.Where(&args), args...).Scan(&escalated, &replayed)
	if err != nil {
		return 0, 0, fmt.Errorf("count excluded dead letters: %w", err)
	}
	return escalated, replayed, nil
}
