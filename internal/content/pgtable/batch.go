package pgtable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/corpus"
)

// Batch is one drain of a source's queue, in a REPEATABLE READ
// transaction of the application database that it holds until Ack or
// Close. It is a corpus.Walker.
type Batch struct {
	cfg    Config
	tx     pgx.Tx
	idType string
	// keys are the distinct queued keys the batch drains, in order.
	keys []string
	// reload is set when the snapshot saw a queued full reload.
	reload bool
	// oldest is when the oldest queued change the batch drains was made.
	oldest time.Time
	// changes counts the queue rows the batch drains.
	changes int64
}

var _ corpus.Walker = (*Batch)(nil)

// keyPage is how many keys one query of Walk looks up.
const keyPage = 1000

// Open starts a drain: it takes the snapshot and reads which keys are
// queued, at most cfg.MaxKeys of them (the rest wait for the next
// drain), or whether a full reload is. Close or Ack the batch.
func Open(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Batch, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("table source %s: begin: %w", cfg.Source, err)
	}
	b := &Batch{cfg: cfg, tx: tx}
	if err := b.load(ctx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return b, nil
}

func (b *Batch) load(ctx context.Context) error {
	var oldest *time.Time
	err := b.tx.QueryRow(ctx, `SELECT count(*), min(queued_at), coalesce(bool_or(op = 'reload'), false) FROM sluice_sync.queue WHERE source = $1`,
		b.cfg.Source).Scan(&b.changes, &oldest, &b.reload)
	if err != nil {
		return fmt.Errorf("table source %s: read the queue (is it installed?): %w", b.cfg.Source, err)
	}
	if oldest != nil {
		b.oldest = *oldest
	}
	if err := b.tx.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2`,
		b.cfg.ident(), b.cfg.ID).Scan(&b.idType); err != nil {
		return fmt.Errorf("table source %s: the type of %s.%s: %w", b.cfg.Source, b.cfg.Table, b.cfg.ID, err)
	}
	if b.reload || b.changes == 0 {
		return nil
	}
	rows, err := b.tx.Query(ctx, `SELECT DISTINCT key FROM sluice_sync.queue WHERE source = $1 AND key IS NOT NULL ORDER BY key LIMIT $2`,
		b.cfg.Source, b.cfg.MaxKeys)
	if err != nil {
		return fmt.Errorf("table source %s: read the queue: %w", b.cfg.Source, err)
	}
	b.keys, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("table source %s: read the queue: %w", b.cfg.Source, err)
	}
	return nil
}

// Empty reports whether nothing was queued when the snapshot was taken.
func (b *Batch) Empty() bool { return b.changes == 0 }

// Reload reports whether the batch is a full reload: Walk yields every
// row, and the source's documents it does not yield are to be deleted.
func (b *Batch) Reload() bool { return b.reload }

// Changes counts the queued changes the snapshot saw for the source.
func (b *Batch) Changes() int64 { return b.changes }

// Keys counts the distinct keys the batch drains (0 for a reload).
func (b *Batch) Keys() int { return len(b.keys) }

// Oldest is when the oldest change the snapshot saw was queued; zero
// when the queue was empty.
func (b *Batch) Oldest() time.Time { return b.oldest }

// Walk yields the batch's documents: for a reload every row of the
// table that matches the filter, in key order; otherwise each drained
// key once, as its row in the snapshot, or as a tombstone when the row
// is gone or does not match the filter.
func (b *Batch) Walk(ctx context.Context, fn func(corpus.Document) error) error {
	if b.reload {
		rows, err := b.tx.Query(ctx, `SELECT to_jsonb(t) ->> `+quoteLiteral(b.cfg.ID)+`, to_jsonb(t) FROM (SELECT * FROM `+b.cfg.ident()+
			` WHERE `+b.cfg.filter()+`) t ORDER BY t.`+pgx.Identifier{b.cfg.ID}.Sanitize())
		if err != nil {
			return fmt.Errorf("table source %s: read %s: %w", b.cfg.Source, b.cfg.Table, err)
		}
		return b.yield(ctx, rows, fn)
	}
	for i := 0; i < len(b.keys); i += keyPage {
		page := b.keys[i:min(i+keyPage, len(b.keys))]
		rows, err := b.tx.Query(ctx, `SELECT k.sluice_key, to_jsonb(t) FROM unnest($1::text[]) WITH ORDINALITY k(sluice_key, n)
			LEFT JOIN (SELECT * FROM `+b.cfg.ident()+` WHERE `+b.cfg.filter()+`) t ON t.`+pgx.Identifier{b.cfg.ID}.Sanitize()+` = k.sluice_key::`+b.idType+`
			ORDER BY k.n`, page)
		if err != nil {
			return fmt.Errorf("table source %s: read %s: %w", b.cfg.Source, b.cfg.Table, err)
		}
		if err := b.yield(ctx, rows, fn); err != nil {
			return err
		}
	}
	return nil
}

// yield turns each (key, row) of rows into a document; a NULL row is a
// tombstone.
func (b *Batch) yield(ctx context.Context, rows pgx.Rows, fn func(corpus.Document) error) error {
	defer rows.Close()
	var key string
	var row []byte
	for rows.Next() {
		if err := rows.Scan(&key, &row); err != nil {
			return fmt.Errorf("table source %s: %w", b.cfg.Source, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := b.document(key, row)
		if err != nil {
			return err
		}
		if err := fn(doc); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("table source %s: read %s: %w", b.cfg.Source, b.cfg.Table, err)
	}
	return nil
}

// document is the document of a row (as JSON), or the tombstone of key
// when row is nil.
func (b *Batch) document(key string, row []byte) (corpus.Document, error) {
	if row == nil {
		return corpus.Document{NativeID: key, Status: corpus.StatusDeleted, Deleted: true}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber()
	var cols map[string]any
	if err := dec.Decode(&cols); err != nil {
		return corpus.Document{}, fmt.Errorf("table source %s: row %s: %w", b.cfg.Source, key, err)
	}
	var parts []string
	for _, c := range b.cfg.Text {
		switch v := cols[c].(type) {
		case nil:
		case string:
			if strings.TrimSpace(v) != "" {
				parts = append(parts, v)
			}
		default:
			raw, _ := json.Marshal(v)
			parts = append(parts, string(raw))
		}
	}
	meta := map[string]any{"table": b.cfg.Table}
	for _, c := range b.cfg.Meta {
		meta[c] = cols[c]
	}
	text := strings.Join(parts, "\n\n")
	doc := corpus.Document{NativeID: key, Text: text, Metadata: meta, Codec: "utf-8", Status: corpus.StatusOK, Size: int64(len(text))}
	if strings.TrimSpace(text) == "" {
		doc.Status, doc.Text = corpus.StatusEmpty, ""
	}
	return doc, nil
}

// Ack deletes the queue rows the batch drained, only those its snapshot
// saw, and commits: call it once what Walk yielded is durably recorded.
func (b *Batch) Ack(ctx context.Context) error {
	var err error
	if b.reload {
		_, err = b.tx.Exec(ctx, `DELETE FROM sluice_sync.queue WHERE source = $1`, b.cfg.Source)
	} else if len(b.keys) > 0 {
		_, err = b.tx.Exec(ctx, `DELETE FROM sluice_sync.queue WHERE source = $1 AND key = ANY($2)`, b.cfg.Source, b.keys)
	}
	if err != nil {
		_ = b.tx.Rollback(context.WithoutCancel(ctx))
		return fmt.Errorf("table source %s: acknowledge the drained changes: %w", b.cfg.Source, err)
	}
	if err := b.tx.Commit(ctx); err != nil {
		return fmt.Errorf("table source %s: acknowledge the drained changes: %w", b.cfg.Source, err)
	}
	return nil
}

// Close ends a batch without acknowledging it: its changes stay queued.
// Closing an acknowledged batch does nothing.
func (b *Batch) Close(ctx context.Context) {
	_ = b.tx.Rollback(context.WithoutCancel(ctx))
}
