package bulk

import (
	"context"
	"errors"
	"fmt"
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

// sized is a member and what its request takes.
type sized struct {
	m Member
	s size
}

// groupKey is a source's generation: its members share batches.
type groupKey struct {
	source     string
	generation int
}

// Admit records members in the caller's transaction, each in the open
// batch of its source and generation, sealing a batch when the next
// member would take it past a limit and opening the next. Acknowledge the
// members' messages only after tx commits: from then on the ledger holds
// them. A chunk version already pending in a batch of its generation is
// not admitted again, so a redelivered job costs nothing.
//
// Errors: a *RefusedError matching ErrTooLarge, having recorded nothing,
// when members fit no batch on their own; an error for a member without a
// source, document, or text.
func (l *Ledger) Admit(ctx context.Context, tx pgx.Tx, members []Member) error {
	var order []groupKey
	groups := map[groupKey][]sized{}
	var refused []Refusal
	for _, m := range members {
		if m.SourceID == "" || m.DocID == "" || m.Text == "" || m.Version < 1 || m.ChunkIndex < 0 {
			return fmt.Errorf("bulk: admit %s: a member needs a source, a document, a version, a chunk index and text", m.customID())
		}
		if m.Generation == 0 {
			m.Generation = 1
		}
		m.CustomID = m.customID()
		s, err := l.cfg.measure(m.CustomID, m.Text)
		if err != nil {
			return err
		}
		if err := alone(s, l.cfg.Limits); err != nil {
			refused = append(refused, Refusal{Member: m, Err: err})
			continue
		}
		k := groupKey{m.SourceID, m.Generation}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], sized{m, s})
	}
	if len(refused) > 0 {
		return &RefusedError{Refused: refused}
	}
	now := l.deps.Now()
	for _, k := range order {
		if err := l.admitGroup(ctx, tx, k, groups[k], now); err != nil {
			return fmt.Errorf("bulk: admit to %s (generation %d): %w", k.source, k.generation, err)
		}
	}
	return nil
}

// openBatch is a source's open batch, locked for the transaction.
type openBatch struct {
	id   int64
	size size
}

func (l *Ledger) admitGroup(ctx context.Context, tx pgx.Tx, k groupKey, items []sized, now time.Time) error {
	b, err := l.open(ctx, tx, k, now)
	if err != nil {
		return err
	}
	var pending []sized
	for _, it := range items {
		if !fits(b.size, it.s, l.cfg.Limits) {
			if err := l.insert(ctx, tx, b.id, pending, now); err != nil {
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
		pending = append(pending, it)
		b.size = b.size.plus(it.s)
	}
	if err := l.insert(ctx, tx, b.id, pending, now); err != nil {
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

// insert records members of batch id, skipping those already pending in a
// batch of their generation, and adds what was recorded to its counts.
func (l *Ledger) insert(ctx context.Context, tx pgx.Tx, id int64, items []sized, now time.Time) error {
	if len(items) == 0 {
		return nil
	}
	n := len(items)
	var (
		customIDs, sources, docs, hashes, texts = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		gens, chunks, toks, bytes               = make([]int32, n), make([]int32, n), make([]int64, n), make([]int64, n)
		versions                                = make([]int64, n)
	)
	for i, it := range items {
		m := it.m
		customIDs[i], sources[i], docs[i], hashes[i], texts[i] = m.CustomID, m.SourceID, m.DocID, m.ContentHash, m.Text
		gens[i], chunks[i], versions[i] = int32(m.Generation), int32(m.ChunkIndex), m.Version
		toks[i], bytes[i] = it.s.tokens, it.s.bytes
	}
	var added, addedBytes, addedTokens int64
	err := tx.QueryRow(ctx, `
		WITH added AS (
			INSERT INTO bulk_members (batch_id, custom_id, generation, source_id, doc_id, chunk_index, version,
			                          content_hash, text, tokens, bytes, updated_at)
			SELECT $1, c, g, s, d, ci, v, h, t, tk, b, $12
			FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[], $10::bigint[], $11::bigint[])
			     AS u(c, g, s, d, ci, v, h, t, tk, b)
			ON CONFLICT (generation, doc_id, chunk_index, version) WHERE state = 'pending' DO NOTHING
			RETURNING tokens, bytes
		), counted AS (
			SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b, coalesce(sum(tokens), 0) AS t FROM added
		), moved AS (
			UPDATE bulk_batches SET requests = requests + n, inputs = inputs + n, bytes = bulk_batches.bytes + b,
			                        tokens = bulk_batches.tokens + t, updated_at = $12
			FROM counted WHERE batch_id = $1
		)
		SELECT n, b, t FROM counted`,
		id, customIDs, gens, sources, docs, chunks, versions, hashes, texts, toks, bytes, now).Scan(&added, &addedBytes, &addedTokens)
	if err != nil {
		return fmt.Errorf("record members: %w", err)
	}
	l.deps.Metrics.member(outcomeAdmitted, int(added))
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
