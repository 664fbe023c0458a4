package bulk

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/pkg/classify"
)

// memberColumns are the columns of a member as Member holds them.
const memberColumns = `m.batch_id, m.custom_id, m.line_id, m.generation, m.source_id, m.doc_id, m.chunk_index, m.version, m.content_hash, m.text`

func scanMember(rows pgx.CollectableRow) (Member, error) {
	var m Member
	err := rows.Scan(&m.BatchID, &m.CustomID, &m.LineID, &m.Generation, &m.SourceID, &m.DocID, &m.ChunkIndex, &m.Version, &m.ContentHash, &m.Text)
	return m, err
}

// takePending reads and locks the pending members of batch id, those
// waiting on lineIDs only unless it is nil.
func takePending(ctx context.Context, tx pgx.Tx, id int64, lineIDs []string) ([]Member, error) {
	rows, err := tx.Query(ctx, `
		SELECT `+memberColumns+` FROM bulk_members m
		WHERE m.batch_id = $1 AND m.state = 'pending' AND ($2::text[] IS NULL OR m.line_id = ANY($2))
		ORDER BY m.custom_id FOR UPDATE`, id, lineIDs)
	if err != nil {
		return nil, fmt.Errorf("read pending members: %w", err)
	}
	members, err := pgx.CollectRows(rows, scanMember)
	if err != nil {
		return nil, fmt.Errorf("read pending members: %w", err)
	}
	return members, nil
}

// routed is a result line and what it does to its member.
type routed struct {
	res      batchapi.Result
	state    MemberState
	err      error
	decision classify.Decision
}

// applySlice applies the results of a file's lines up to last, in one
// transaction with the ledger's cursor: the members still pending on
// each line take its result, and the Applier and Requeuer get only
// those, so a line read again changes nothing.
func (p *Poller) applySlice(ctx context.Context, id int64, cursor string, results []batchapi.Result, last int) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var cur int
	if err := tx.QueryRow(ctx, `SELECT `+cursor+` FROM bulk_batches WHERE batch_id = $1 FOR UPDATE`, id).Scan(&cur); err != nil {
		return fmt.Errorf("apply: lock batch: %w", err)
	}
	if cur >= last {
		return nil
	}
	byLine := make(map[string]routed, len(results))
	lines := make([]string, 0, len(results))
	for _, res := range results {
		st, d, err := route(res)
		byLine[res.CustomID] = routed{res, st, err, d}
		lines = append(lines, res.CustomID)
	}
	members, err := takePending(ctx, tx, id, lines)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if err := p.markAnswered(ctx, tx, id, members, byLine); err != nil {
		return err
	}
	stored, parked, owed, err := p.hand(ctx, tx, members, byLine)
	if err != nil {
		return err
	}
	// A line the batch left over when it expired or was cancelled did
	// not run: its members were not answered.
	var notRun int
	for _, m := range members {
		if e := byLine[m.LineID].err; errors.Is(e, batchapi.ErrRequestExpired) || errors.Is(e, batchapi.ErrRequestCancelled) {
			notRun++
		}
	}
	if _, err := tx.Exec(ctx, `
		UPDATE bulk_batches SET `+cursor+` = $2, stored = stored + $3, parked = parked + $4, requeued = requeued + $5,
		       unanswered = unanswered + $7, updated_at = $6
		WHERE batch_id = $1`, id, last, stored, parked, owed, p.deps.Now(), notRun); err != nil {
		return fmt.Errorf("apply: record lines applied: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("apply: commit: %w", err)
	}
	p.deps.Metrics.member(outcomeApplied, stored)
	p.deps.Metrics.member(outcomeParked, parked)
	p.deps.Metrics.member(outcomeRequeued, owed)
	return nil
}

// markAnswered moves each of members, read pending under the batch's lock,
// to the state its line's result gives it. A member that leaves pending
// keeps no text: the Applier and the Requeuer have it, and the ledger no
// longer needs it. Only these members are marked: one that joined a line
// since takes nothing here, and is owed when the batch settles.
func (p *Poller) markAnswered(ctx context.Context, tx pgx.Tx, id int64, members []Member, byLine map[string]routed) error {
	ids, states, classes := make([]string, len(members)), make([]string, len(members)), make([]string, len(members))
	for i, m := range members {
		r := byLine[m.LineID]
		ids[i], states[i], classes[i] = m.CustomID, string(r.state), r.decision.Class
	}
	if _, err := tx.Exec(ctx, `
		UPDATE bulk_members m SET state = u.st, error_class = nullif(u.cls, ''), text = '', updated_at = $5
		FROM unnest($2::text[], $3::text[], $4::text[]) AS u(c, st, cls)
		WHERE m.batch_id = $1 AND m.custom_id = u.c AND m.state = 'pending'`, id, ids, states, classes, p.deps.Now()); err != nil {
		return fmt.Errorf("apply: mark members: %w", err)
	}
	return nil
}

// hand gives the members that took a result to the Applier (a vector or a
// parking error) and the Requeuer (owed again), and counts them.
func (p *Poller) hand(ctx context.Context, tx pgx.Tx, members []Member, byLine map[string]routed) (stored, parked, owed int, err error) {
	var apply []Result
	var again []Owed
	for _, m := range members {
		r := byLine[m.LineID]
		switch r.state {
		case MemberApplied:
			apply = append(apply, Result{Member: m, Vector: r.res.Vectors[0], PromptTokens: r.res.PromptTokens})
			stored++
		case MemberParked:
			apply = append(apply, Result{Member: m, Err: r.err, Decision: r.decision, PromptTokens: r.res.PromptTokens})
			parked++
		default:
			again = append(again, Owed{Member: m, Cause: r.err})
		}
	}
	if len(apply) > 0 {
		if err := p.applier.Apply(ctx, tx, apply); err != nil {
			return 0, 0, 0, fmt.Errorf("apply: %w", err)
		}
	}
	if len(again) > 0 {
		if err := p.requeuer.Requeue(ctx, tx, again); err != nil {
			return 0, 0, 0, fmt.Errorf("requeue: %w", err)
		}
	}
	return stored, parked, len(again), nil
}

// settle ends a batch the provider is done with: every member still
// pending is handed back as owed work, in one transaction with the
// batch's final state.
func (p *Poller) settle(ctx context.Context, id int64) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var state State
	var source, detail, outcome string
	if err := tx.QueryRow(ctx, `SELECT state, source_id, coalesce(last_error, ''), coalesce(outcome, '') FROM bulk_batches WHERE batch_id = $1 FOR UPDATE`, id).
		Scan(&state, &source, &detail, &outcome); err != nil {
		return fmt.Errorf("settle: lock batch: %w", err)
	}
	if !ended(state) {
		return nil
	}
	if state != Failed {
		detail = ""
	}
	if outcome == "" {
		outcome = string(state) // markLost names a lost output itself
	}
	now := p.deps.Now()
	members, err := takePending(ctx, tx, id, nil)
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.CustomID
	}
	if _, err := tx.Exec(ctx, `
		UPDATE bulk_members SET state = 'requeued', text = '', updated_at = $2
		WHERE batch_id = $1 AND custom_id = ANY($3) AND state = 'pending'`, id, now, ids); err != nil {
		return fmt.Errorf("settle: mark members: %w", err)
	}
	if len(members) > 0 {
		cause := causeOf(state, detail)
		owed := make([]Owed, len(members))
		for i, m := range members {
			owed[i] = Owed{Member: m, Cause: cause}
		}
		if err := p.requeuer.Requeue(ctx, tx, owed); err != nil {
			return fmt.Errorf("requeue: %w", err)
		}
	}
	final := settledAs(state)
	if _, err := tx.Exec(ctx, `
		UPDATE bulk_batches SET state = $2, requeued = requeued + $3, unanswered = unanswered + $3, outcome = $5,
		       settled_at = $4, updated_at = $4, finished_at = coalesce(finished_at, $4), members = `+countMembers+`
		WHERE batch_id = $1`, id, final, len(members), now, outcome); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("settle: commit: %w", err)
	}
	p.deps.Metrics.member(outcomeRequeued, len(members))
	p.deps.Metrics.ended(source, outcome)
	p.deps.Log.Info().Int64("batch", id).Str("ended", outcome).Str("state", string(final)).Int("requeued", len(members)).
		Msg("bulk batch settled")
	return nil
}

// count sets the batches gauge from the ledger.
func (p *Poller) count(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `SELECT state, count(*) FROM bulk_batches GROUP BY state`)
	if err != nil {
		return fmt.Errorf("bulk: count batches: %w", err)
	}
	type n struct {
		State State
		N     int64
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[n])
	if err != nil {
		return fmt.Errorf("bulk: count batches: %w", err)
	}
	for _, s := range States {
		p.deps.Metrics.batches.WithLabelValues(string(s)).Set(0)
	}
	for _, c := range counts {
		p.deps.Metrics.batches.WithLabelValues(string(c.State)).Set(float64(c.N))
	}
	return nil
}
