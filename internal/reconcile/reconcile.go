// Package reconcile proves DESIGN §7 from the database and the broker: no
// silent drop (every manifest row stored with a vector, parked with a dead
// letter, or pending with a message to deliver it), no duplicate, and no
// stale pending work. With Redrive it re-publishes owed work from
// PostgreSQL alone, even when the INGEST stream is gone.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Report is what a reconciliation found (DESIGN §7).
type Report struct {
	Chunks     map[string]int `json:"chunks_by_status"`
	Leaked     Leaks          `json:"leaked"`
	Duplicated int            `json:"duplicated"`
	// StalePending are pending chunks with no message left to deliver
	// them: their source has none in INGEST (or INGEST is gone), or they
	// have waited longer than --stale-after.
	StalePending int  `json:"stale_pending"`
	Redriven     int  `json:"redriven"`
	OK           bool `json:"ok"`
}

// Leaks are chunks the system lost track of.
type Leaks struct {
	// StoredWithoutVector are manifest rows marked stored with no vector
	// of their version.
	StoredWithoutVector int `json:"stored_without_vector"`
	// ParkedWithoutDeadLetter are manifest rows marked parked with neither
	// a dead_letters row nor an outbox row.
	ParkedWithoutDeadLetter int `json:"parked_without_dead_letter"`
}

// Total is the number of leaked chunks.
func (l Leaks) Total() int { return l.StoredWithoutVector + l.ParkedWithoutDeadLetter }

// Run checks the invariants; with redrive it re-publishes stale pending
// chunks. staleAfter is how long a pending chunk may wait even while its
// source still has messages in INGEST.
func Run(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, staleAfter time.Duration, redrive bool) (*Report, error) {
	rep := &Report{Chunks: map[string]int{}}
	rows, err := pool.Query(ctx, `SELECT status, count(*) FROM ingest_manifest GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count chunks: %w", err)
	}
	var status string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { rep.Chunks[status] = n; return nil }); err != nil {
		return nil, fmt.Errorf("count chunks: %w", err)
	}
	err = pool.QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM ingest_manifest m WHERE m.status = 'stored' AND NOT EXISTS (
		     SELECT 1 FROM chunk_embeddings e WHERE e.doc_id = m.doc_id AND e.chunk_index = m.chunk_index AND e.version >= m.version)),
		  (SELECT count(*) FROM ingest_manifest m WHERE m.status = 'parked'
		     AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.doc_id = m.doc_id AND d.chunk_index = m.chunk_index)
		     AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'doc_id' = m.doc_id
		                     AND (o.payload->>'chunk_index')::int = m.chunk_index)),
		  (SELECT count(*) FROM (SELECT 1 FROM chunk_embeddings GROUP BY doc_id, chunk_index HAVING count(*) > 1) d)`).
		Scan(&rep.Leaked.StoredWithoutVector, &rep.Leaked.ParkedWithoutDeadLetter, &rep.Duplicated)
	if err != nil {
		return nil, fmt.Errorf("leak queries: %w", err)
	}
	stale, err := stalePending(ctx, pool, js, staleAfter)
	if err != nil {
		return nil, err
	}
	rep.StalePending = len(stale)
	if redrive && len(stale) > 0 {
		if rep.Redriven, err = redriveChunks(ctx, pool, js, stale); err != nil {
			return rep, err
		}
	}
	rep.OK = rep.Leaked.Total() == 0 && rep.Duplicated == 0 && rep.StalePending == rep.Redriven
	return rep, nil
}

type pendingChunk struct {
	docID, source string
	index         int
	version       int64
	job           []byte
}

// stalePending finds pending chunks nothing will deliver: those of sources
// with no message in INGEST (or when INGEST is gone), and those pending
// longer than staleAfter.
func stalePending(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, staleAfter time.Duration) ([]pendingChunk, error) {
	rows, err := pool.Query(ctx, `
		SELECT m.doc_id, d.source_id, m.chunk_index, m.version, m.job, m.updated_at < now() - make_interval(secs => $1)
		FROM ingest_manifest m JOIN documents d USING (doc_id)
		WHERE m.status = 'pending'`, staleAfter.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read pending chunks: %w", err)
	}
	var all []pendingChunk
	var old []bool
	var p pendingChunk
	var isOld bool
	if _, err := pgx.ForEachRow(rows, []any{&p.docID, &p.source, &p.index, &p.version, &p.job, &isOld}, func() error {
		all = append(all, p)
		old = append(old, isOld)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read pending chunks: %w", err)
	}
	queued := map[string]bool{}
	stream, err := js.Stream(ctx, broker.IngestStream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return nil, fmt.Errorf("inspect INGEST: %w", err)
	default:
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter("ingest.>"))
		if err != nil {
			return nil, fmt.Errorf("inspect INGEST: %w", err)
		}
		for subject := range info.State.Subjects {
			if src, err := messages.SourceFromSubject(subject); err == nil {
				queued[src] = true
			}
		}
	}
	var stale []pendingChunk
	for i, c := range all {
		if old[i] || !queued[c.source] {
			stale = append(stale, c)
		}
	}
	return stale, nil
}

// redriveChunks re-publishes pending chunks from the manifest's stored job
// bytes, under their original message ids; the pipeline makes any
// duplicate delivery harmless.
func redriveChunks(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, chunks []pendingChunk) (int, error) {
	if err := broker.EnsureExists(ctx, js, broker.Topology{}); err != nil {
		return 0, err
	}
	futures := make([]jetstream.PubAckFuture, len(chunks))
	for i, c := range chunks {
		msg := &nats.Msg{Subject: messages.ChunkSubject(c.source), Data: c.job, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, messages.ChunkMsgID(c.docID, c.index, c.version))
		var err error
		if futures[i], err = js.PublishMsgAsync(msg); err != nil {
			return 0, fmt.Errorf("redrive: %w", err)
		}
	}
	done := 0
	var docIDs []string
	var indexes []int32
	for i, f := range futures {
		select {
		case <-f.Ok():
			done++
			docIDs, indexes = append(docIDs, chunks[i].docID), append(indexes, int32(chunks[i].index))
		case err := <-f.Err():
			return done, fmt.Errorf("redrive: %w", err)
		case <-ctx.Done():
			return done, ctx.Err()
		}
	}
	_, err := pool.Exec(ctx, `
		UPDATE ingest_manifest m SET published_at = now(), updated_at = now()
		FROM unnest($1::text[], $2::int4[]) AS t(doc_id, chunk_index)
		WHERE m.doc_id = t.doc_id AND m.chunk_index = t.chunk_index AND m.status = 'pending'`, docIDs, indexes)
	return done, err
}
