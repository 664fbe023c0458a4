package manifest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Owed is a Pending chunk whose job is owed to INGEST: its publish was
// never confirmed, or its confirmation points into a stream since lost.
type Owed struct {
	DocID   string
	Index   int
	Version int64
	// Gen is the chunk's publish generation (publish_gen).
	Gen    int
	Source string
	// Job is the job's exact bytes, as first published.
	Job []byte
}

// OwedQuery selects a page of owed chunks, in key order.
type OwedQuery struct {
	// Grace is how long ago an unconfirmed chunk must have been
	// recorded: younger ones may still be confirmed by their publisher.
	Grace time.Duration
	// StreamCreated is when INGEST was created. With Lost, a chunk
	// confirmed before it is owed too, which needs a scan of every
	// Pending chunk; without, only the index of unconfirmed ones is read.
	StreamCreated time.Time
	Lost          bool
	// Source limits the page to one source; "" reads every source.
	Source string
	// AfterDoc and AfterIndex are the keyset position: the page starts
	// after that chunk.
	AfterDoc   string
	AfterIndex int
	// Limit is the page's size.
	Limit int
}

// The owed-chunk queries take the same parameters: $1 the grace in
// seconds, $2 when INGEST was created, $3 a source or the empty string
// for all, $4 and $5 the keyset position, $6 the page's size.
const (
	owedSelect = `
		SELECT m.doc_id, m.chunk_index, m.version, m.publish_gen, d.source_id, m.job
		FROM ingest_manifest m JOIN documents d USING (doc_id)
		WHERE m.status = ` + SQLPending + ` AND `
	owedRest = `
		  AND ($3 = '' OR d.source_id = $3)
		  AND (m.doc_id, m.chunk_index) > ($4, $5)
		ORDER BY m.doc_id, m.chunk_index
		LIMIT $6`
	unconfirmedSQL = owedSelect + `m.published_at IS NULL AND m.updated_at < now() - make_interval(secs => $1)
		  AND $2::timestamptz IS NOT NULL` + owedRest
	lostSQL = owedSelect + `((m.published_at IS NULL AND m.updated_at < now() - make_interval(secs => $1))
		       OR m.published_at < $2)` + owedRest
)

// OwedPage reads the page of owed chunks o selects.
func OwedPage(ctx context.Context, q Querier, o OwedQuery) ([]Owed, error) {
	query := unconfirmedSQL
	if o.Lost {
		query = lostSQL
	}
	rows, err := q.Query(ctx, query, o.Grace.Seconds(), o.StreamCreated, o.Source, o.AfterDoc, o.AfterIndex, o.Limit)
	if err != nil {
		return nil, fmt.Errorf("read owed chunks: %w", err)
	}
	var page []Owed
	var c Owed
	var index int32
	if _, err := pgx.ForEachRow(rows, []any{&c.DocID, &index, &c.Version, &c.Gen, &c.Source, &c.Job}, func() error {
		c.Index = int(index)
		page = append(page, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read owed chunks: %w", err)
	}
	return page, nil
}

// CountUnconfirmed counts the Pending chunks whose publish is not yet
// confirmed, and those of them recorded more than grace ago.
func CountUnconfirmed(ctx context.Context, q Querier, grace time.Duration) (all, overdue int64, err error) {
	rows, err := q.Query(ctx, `
		SELECT count(*), count(*) FILTER (WHERE updated_at < now() - make_interval(secs => $1))
		FROM ingest_manifest WHERE status = `+SQLPending+` AND published_at IS NULL`, grace.Seconds())
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&all, &overdue}, func() error { return nil })
	}
	if err != nil {
		return 0, 0, fmt.Errorf("count unconfirmed chunks: %w", err)
	}
	return all, overdue, nil
}
