package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// lostBatch is how many confirmed pending rows one query reads.
const lostBatch = 500

// stranded counts messages in INGEST that no durable will deliver: the
// stream holds more than the durables have pending or awaiting an ack.
// A repair walks the stream: a message whose chunk is still owed is
// published again under a new generation, and every stranded message is
// then deleted.
func (c *checker) stranded(ctx context.Context) error {
	stream, err := c.js.Stream(ctx, broker.IngestStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect INGEST: %w", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("inspect INGEST: %w", err)
	}
	deliverable := uint64(0)
	for _, name := range []string{broker.WorkersConsumer, broker.ReplayConsumer, broker.BackfillConsumer} {
		cons, err := stream.Consumer(ctx, name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("inspect %s: %w", name, err)
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", name, err)
		}
		deliverable += ci.NumPending + uint64(ci.NumAckPending)
	}
	if info.State.Msgs <= deliverable {
		return nil
	}
	c.rep.Stranded = int(info.State.Msgs - deliverable)
	if !c.opts.Redrive {
		return nil
	}
	c.rep.Redriven["stranded"] = c.unstrand(ctx, stream, info.State.FirstSeq, info.State.LastSeq)
	return nil
}

// unstrand walks the messages in INGEST from seq to last, the stream's
// last sequence when the walk began (the walk's own republishes land past
// it), and returns how many it cleared.
func (c *checker) unstrand(ctx context.Context, stream jetstream.Stream, seq, last uint64) int {
	cleared := 0
	for seq <= last {
		msg, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject("ingest.>"))
		if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && msg.Sequence > last) {
			return cleared
		}
		if err != nil {
			c.fail("walk INGEST", err)
			return cleared
		}
		seq = msg.Sequence + 1
		if job, ok := c.owedJob(ctx, msg.Data); ok {
			res, err := c.pub.Republish(ctx, []publish.Job{job})
			if err != nil || len(res.Failed) > 0 {
				c.fail(fmt.Sprintf("republish stranded message %d", msg.Sequence), errors.Join(err, res.Err))
				continue
			}
		}
		if err := stream.DeleteMsg(ctx, msg.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			c.fail(fmt.Sprintf("delete stranded message %d", msg.Sequence), err)
			continue
		}
		cleared++
	}
	return cleared
}

// owedJob returns the manifest's job for a message's chunk when that
// chunk is still pending at the message's version.
func (c *checker) owedJob(ctx context.Context, data []byte) (publish.Job, bool) {
	cj, err := messages.DecodeChunkJob(data)
	if err != nil {
		return publish.Job{}, false
	}
	j := publish.Job{DocID: cj.DocID, Index: cj.ChunkIndex, Version: cj.DocVersion, Source: cj.SourceID}
	err = c.pool.QueryRow(ctx, `
		SELECT m.publish_gen, m.job FROM ingest_manifest m
		WHERE m.doc_id = $1 AND m.chunk_index = $2 AND m.version = $3 AND m.status = $4`,
		cj.DocID, cj.ChunkIndex, cj.DocVersion, manifest.Pending).Scan(&j.Gen, &j.Raw)
	return j, err == nil
}

// lost counts pending chunks whose confirmed message is no longer in
// INGEST, checking each by the sequence its PubAck named; a repair
// publishes them again under a new generation.
func (c *checker) lost(ctx context.Context) error {
	// A lost INGEST must be declared again by the topology owner (sluice
	// nats setup) before its owed work can be republished into it.
	stream, err := broker.Stream(ctx, c.js, broker.IngestStream)
	if err != nil {
		return fmt.Errorf("inspect INGEST: %w", err)
	}
	after := struct {
		docID string
		index int32
	}{}
	for {
		rows, err := c.pool.Query(ctx, `
			SELECT m.doc_id, m.chunk_index, m.version, m.publish_gen, d.source_id, m.job, m.publish_seq
			FROM ingest_manifest m JOIN documents d USING (doc_id)
			WHERE m.status = `+manifest.SQLPending+` AND m.published_at IS NOT NULL AND (m.doc_id, m.chunk_index) > ($1, $2)
			  AND NOT `+bulk.HoldsSQL+`
			ORDER BY m.doc_id, m.chunk_index LIMIT $3`, after.docID, after.index, lostBatch)
		if err != nil {
			return fmt.Errorf("read confirmed pending chunks: %w", err)
		}
		var batch []publish.Job
		var seqs []int64
		var j publish.Job
		var index int32
		var seq *int64
		if _, err := pgx.ForEachRow(rows, []any{&j.DocID, &index, &j.Version, &j.Gen, &j.Source, &j.Raw, &seq}, func() error {
			j.Index = int(index)
			batch = append(batch, j)
			seqs = append(seqs, deref(seq))
			after.docID, after.index = j.DocID, index
			return nil
		}); err != nil {
			return fmt.Errorf("read confirmed pending chunks: %w", err)
		}
		var gone []publish.Job
		for i, job := range batch {
			msg, err := stream.GetMsg(ctx, uint64(seqs[i]))
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && msg.Header.Get(jetstream.MsgIDHeader) != job.MsgID()):
				gone = append(gone, job)
			case err != nil:
				return fmt.Errorf("look up message %d: %w", seqs[i], err)
			}
		}
		c.rep.Lost += len(gone)
		if c.opts.Redrive && len(gone) > 0 {
			res, err := c.pub.Republish(ctx, gone)
			if err != nil || len(res.Failed) > 0 {
				c.fail("republish lost chunks", errors.Join(err, res.Err))
			}
			c.rep.Redriven["lost"] += res.Confirmed
		}
		if len(batch) < lostBatch {
			return nil
		}
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// durableOutstanding counts durable's messages of INGEST not yet
// acknowledged, delivered or not; 0 when the durable does not exist.
func (c *checker) durableOutstanding(ctx context.Context, durable string) (int, error) {
	cons, err := c.js.Consumer(ctx, broker.IngestStream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", durable, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", durable, err)
	}
	return int(info.NumPending) + info.NumAckPending, nil
}
