package bulk

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ledger records chunk jobs as members of their source's open batch, and
// seals batches when they are full or old enough. It is safe for
// concurrent use; concurrent admissions to one source take turns on its
// open batch's row.
type Ledger struct {
	cfg  Config
	deps Deps
}

// NewLedger returns a ledger for cfg.
func NewLedger(cfg Config, deps Deps) (*Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	deps.applyDefaults()
	return &Ledger{cfg: cfg, deps: deps}, nil
}

// groupKey is a source's generation: its members share batches.
type groupKey struct {
	source     string
	generation int
}

// Admit records members in the caller's transaction, one request line
// per distinct text: a member whose text waits in an unfinished batch of
// its generation joins that line, and the others go to the open batch of
// their line's first source and generation, which is sealed when a new
// line would take it past a limit, and the next one opened. Acknowledge
// the members' messages only after tx commits: from then on the ledger
// holds them. A chunk version already pending in a batch of its
// generation is not admitted again, so a redelivered job costs nothing.
//
// Errors: a *RefusedError matching ErrTooLarge, having recorded nothing,
// when members fit no batch on their own; an error for a member without a
// source, document, or text.
func (l *Ledger) Admit(ctx context.Context, tx pgx.Tx, members []Member) error {
	lines, refused, err := l.lines(members)
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		return &RefusedError{Refused: refused}
	}
	now := l.deps.Now()
	if err := lockLines(ctx, tx, lines); err != nil {
		return fmt.Errorf("bulk: admit: %w", err)
	}
	// Lines that wait already are joined before any open batch is locked:
	// a poller settling one of those batches may be admitting to it.
	fresh, err := l.join(ctx, tx, lines, now)
	if err != nil {
		return fmt.Errorf("bulk: admit: %w", err)
	}
	var order []groupKey
	groups := map[groupKey][]*line{}
	for _, ln := range fresh {
		k := groupKey{ln.members[0].SourceID, ln.generation}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ln)
	}
	for _, k := range order {
		if err := l.admitGroup(ctx, tx, k, groups[k], now); err != nil {
			return fmt.Errorf("bulk: admit to %s (generation %d): %w", k.source, k.generation, err)
		}
	}
	return nil
}

// lines checks and measures members and gathers them into their request
// lines, in order of first appearance, with the members that fit no batch
// on their own (every member of a text too large).
func (l *Ledger) lines(members []Member) ([]*line, []Refusal, error) {
	var order []*line
	byKey := map[lineKey]*line{}
	for _, m := range members {
		if m.SourceID == "" || m.DocID == "" || m.Text == "" || m.Version < 1 || m.ChunkIndex < 0 {
			return nil, nil, fmt.Errorf("bulk: admit %s: a member needs a source, a document, a version, a chunk index and text", m.customID())
		}
		if m.Generation == 0 {
			m.Generation = 1
		}
		m.CustomID, m.LineID = m.customID(), LineID(m.Text)
		k := lineKey{m.Generation, m.LineID}
		if ln, ok := byKey[k]; ok {
			ln.members = append(ln.members, m)
			continue
		}
		ln := &line{generation: m.Generation, id: m.LineID, members: []Member{m}}
		byKey[k] = ln
		order = append(order, ln)
	}
	var refused []Refusal
	kept := order[:0]
	for _, ln := range order {
		s, err := l.cfg.measure(ln.id, ln.members[0].Text)
		if err != nil {
			return nil, nil, err
		}
		if err := alone(s, l.cfg.Limits); err != nil {
			for _, m := range ln.members {
				refused = append(refused, Refusal{Member: m, Err: err})
			}
			continue
		}
		ln.s = s
		kept = append(kept, ln)
	}
	return kept, refused, nil
}

// lineLockClass is the first key of the advisory locks on request lines.
const lineLockClass = 0x5b1d

// lockLines takes, until tx ends, a lock on each of lines' texts, in one
// order for every admission so that two never wait on each other. Two
// admissions of one text are then one after the other, and the second
// finds the first's line and joins it: unlocked, each would miss the
// other's uncommitted member and send the text again.
func lockLines(ctx context.Context, tx pgx.Tx, lines []*line) error {
	keys := make([]string, len(lines))
	for i, ln := range lines {
		keys[i] = strconv.Itoa(ln.generation) + ":" + ln.id
	}
	if _, err := tx.Exec(ctx, `
		SELECT count(pg_advisory_xact_lock($1, k))
		FROM (SELECT DISTINCT hashtext(x) AS k FROM unnest($2::text[]) AS x ORDER BY 1) AS s`, int32(lineLockClass), keys); err != nil {
		return fmt.Errorf("lock request lines: %w", err)
	}
	return nil
}

// join adds the members of the lines already waiting in an unfinished
// batch of their generation to that batch, and returns the lines that
// wait nowhere. A batch the provider has completed is unfinished until
// its poller begins to apply its files: a member that joined then
// would find its line's result applied already, and be owed work when
// the batch settles. A batch being moved by a poller is passed over (its
// line is sent again) rather than waited for: the poller applies a slice
// of results holding the batch's row, so a member joins a completed
// batch either before the first slice or not at all.
func (l *Ledger) join(ctx context.Context, tx pgx.Tx, lines []*line, now time.Time) ([]*line, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	gens, ids := make([]int32, len(lines)), make([]string, len(lines))
	for i, ln := range lines {
		gens[i], ids[i] = int32(ln.generation), ln.id
	}
	rows, err := tx.Query(ctx, `
		SELECT m.generation, m.line_id, m.batch_id
		FROM unnest($1::int[], $2::text[]) AS u(g, l)
		JOIN bulk_members m ON m.generation = u.g AND m.line_id = u.l AND m.state = 'pending'
		JOIN bulk_batches b ON b.batch_id = m.batch_id
		WHERE (b.state IN ('open', 'sealed', 'uploaded', 'created', 'validating', 'in_progress', 'finalizing')
		       OR (b.state = 'completed' AND b.output_lines_done = 0 AND b.error_lines_done = 0))
		  AND b.cancel_requested_at IS NULL AND b.input_deleted_at IS NULL
		ORDER BY m.batch_id
		FOR SHARE OF b SKIP LOCKED`, gens, ids)
	if err != nil {
		return nil, fmt.Errorf("find waiting lines: %w", err)
	}
	waiting := map[lineKey]int64{}
	var k lineKey
	var batchID int64
	if _, err := pgx.ForEachRow(rows, []any{&k.generation, &k.id, &batchID}, func() error {
		if _, ok := waiting[k]; !ok {
			waiting[k] = batchID
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("find waiting lines: %w", err)
	}
	var fresh []*line
	joins := map[int64][]*line{}
	var order []int64
	for _, ln := range lines {
		id, ok := waiting[lineKey{ln.generation, ln.id}]
		if !ok {
			fresh = append(fresh, ln)
			continue
		}
		if _, seen := joins[id]; !seen {
			order = append(order, id)
		}
		joins[id] = append(joins[id], ln)
	}
	for _, id := range order {
		if err := l.insert(ctx, tx, id, joins[id], nil, now); err != nil {
			return nil, err
		}
	}
	return fresh, nil
}

// openBatch is a source's open batch, locked for the transaction.
type openBatch struct {
	id   int64
	size size
}

func (l *Ledger) admitGroup(ctx context.Context, tx pgx.Tx, k groupKey, lines []*line, now time.Time) error {
	b, err := l.open(ctx, tx, k, now)
	if err != nil {
		return err
	}
	// While join looked, another admission may have held the open batch,
	// added a line to it and sealed it: that batch is free now.
	if lines, err = l.join(ctx, tx, lines, now); err != nil {
		return err
	}
	var pending []*line
	isNew := map[*line]bool{}
	for _, ln := range lines {
		if !fits(b.size, ln.s, l.cfg.Limits) {
			if err := l.insert(ctx, tx, b.id, pending, isNew, now); err != nil {
				return err
			}
			if err := l.seal(ctx, tx, b.id, now); err != nil {
				return err
			}
			if b, err = l.open(ctx, tx, k, now); err != nil {
				return err
			}
			pending = pending[:0]
		}
		pending, isNew[ln] = append(pending, ln), true
		b.size = b.size.plus(ln.s)
	}
	if err := l.insert(ctx, tx, b.id, pending, isNew, now); err != nil {
		return err
	}
	if full(b.size, l.cfg.Limits) {
		return l.seal(ctx, tx, b.id, now)
	}
	return nil
}

// open returns the source's open batch, opening one if there is none,
// with its row locked.
func (l *Ledger) open(ctx context.Context, tx pgx.Tx, k groupKey, now time.Time) (openBatch, error) {
	for range 3 {
		if _, err := tx.Exec(ctx, `
			INSERT INTO bulk_batches (source_id, generation, opened_at, updated_at) VALUES ($1, $2, $3, $3)
			ON CONFLICT (source_id, generation) WHERE state = 'open' DO NOTHING`, k.source, k.generation, now); err != nil {
			return openBatch{}, fmt.Errorf("open batch: %w", err)
		}
		var b openBatch
		err := tx.QueryRow(ctx, `
			SELECT batch_id, requests, inputs, bytes, tokens FROM bulk_batches
			WHERE source_id = $1 AND generation = $2 AND state = 'open' FOR UPDATE`, k.source, k.generation).
			Scan(&b.id, &b.size.requests, &b.size.inputs, &b.size.bytes, &b.size.tokens)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // sealed between the two statements
		}
		if err != nil {
			return openBatch{}, fmt.Errorf("lock open batch: %w", err)
		}
		return b, nil
	}
	return openBatch{}, errors.New("open batch: sealed by others three times in a row")
}

// insert records the members of lines in batch id, skipping those already
// pending in a batch of their generation, and adds to its counts the
// lines in isNew (new request lines of the batch, which is the open one
// the caller holds) and their members. Members that join a line the
// batch holds leave its row alone: two admissions joining lines of one
// batch would otherwise each hold it shared and wait on the other to
// update it, a deadlock. The builder and the poller count them
// (countMembers) as they move the batch.
func (l *Ledger) insert(ctx context.Context, tx pgx.Tx, id int64, lines []*line, isNew map[*line]bool, now time.Time) error {
	if len(lines) == 0 {
		return nil
	}
	var (
		customIDs, lineIDs, sources, docs, hashes, texts []string
		gens, chunks                                     []int32
		versions, toks, bytes                            []int64
		added                                            size
	)
	for _, ln := range lines {
		if isNew[ln] {
			added = added.plus(ln.s)
		}
		for _, m := range ln.members {
			customIDs, lineIDs, sources, docs = append(customIDs, m.CustomID), append(lineIDs, ln.id), append(sources, m.SourceID), append(docs, m.DocID)
			hashes, texts = append(hashes, m.ContentHash), append(texts, m.Text)
			gens, chunks, versions = append(gens, int32(m.Generation)), append(chunks, int32(m.ChunkIndex)), append(versions, m.Version)
			toks, bytes = append(toks, ln.s.tokens), append(bytes, ln.s.bytes)
		}
	}
	var n int64
	err := tx.QueryRow(ctx, `
		WITH added AS (
			INSERT INTO bulk_members (batch_id, custom_id, line_id, generation, source_id, doc_id, chunk_index, version,
			                          content_hash, text, tokens, bytes, updated_at)
			SELECT $1, c, l, g, s, d, ci, v, h, t, tk, b, $13
			FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::int[], $8::bigint[], $9::text[], $10::text[], $11::bigint[], $12::bigint[])
			     AS u(c, l, g, s, d, ci, v, h, t, tk, b)
			ON CONFLICT (generation, doc_id, chunk_index, version) WHERE state = 'pending' DO NOTHING
			RETURNING 1
		), counted AS (
			SELECT count(*) AS n FROM added
		), moved AS (
			UPDATE bulk_batches SET requests = requests + $14, inputs = inputs + $15, bytes = bulk_batches.bytes + $16,
			                        tokens = bulk_batches.tokens + $17, members = members + n, updated_at = $13
			FROM counted WHERE batch_id = $1 AND $14 > 0
		)
		SELECT n FROM counted`,
		id, customIDs, lineIDs, gens, sources, docs, chunks, versions, hashes, texts, toks, bytes, now,
		added.requests, added.inputs, added.bytes, added.tokens).Scan(&n)
	if err != nil {
		return fmt.Errorf("record members: %w", err)
	}
	l.deps.Metrics.member(outcomeAdmitted, int(n))
	return nil
}

func (l *Ledger) seal(ctx context.Context, tx pgx.Tx, id int64, now time.Time) error {
	if _, err := tx.Exec(ctx, `
		UPDATE bulk_batches SET state = 'sealed', sealed_at = $2, updated_at = $2 WHERE batch_id = $1 AND state = 'open'`,
		id, now); err != nil {
		return fmt.Errorf("seal batch %d: %w", id, err)
	}
	l.deps.Log.Info().Int64("batch", id).Msg("bulk batch sealed: full")
	return nil
}

// SealDue seals every open batch that holds members and was opened
// Config.MaxAge ago or earlier, and returns how many it sealed.
func (l *Ledger) SealDue(ctx context.Context, q Querier) (int64, error) {
	now := l.deps.Now()
	tag, err := q.Exec(ctx, `
		UPDATE bulk_batches SET state = 'sealed', sealed_at = $1, updated_at = $1
		WHERE state = 'open' AND requests > 0 AND opened_at <= $2`, now, now.Add(-l.cfg.MaxAge))
	if err != nil {
		return 0, fmt.Errorf("bulk: seal due batches: %w", err)
	}
	if n := tag.RowsAffected(); n > 0 {
		l.deps.Log.Info().Int64("batches", n).Msg("bulk batches sealed: old enough")
	}
	return tag.RowsAffected(), nil
}
