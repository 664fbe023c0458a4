package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
)

// screen reads the manifest state of every decoded job in one query and
// settles the jobs that need no work: already stored or parked for this
// version (a redelivery), superseded by a newer version, past the delivery
// cap, or unknown to the system of record.
func (p *Pipeline) screen(ctx context.Context, jobs []*Job) ([]*Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	states, err := p.readStates(ctx, jobs)
	if err != nil {
		return nil, err
	}
	live := jobs[:0:0]
	var superseded, held []*Job
	type key struct {
		doc   string
		index int
	}
	seen := make(map[key]bool, len(jobs))
	for i, j := range jobs {
		s, c := states[i], &j.chunk
		if !j.Replay {
			// Deliveries spent waiting on a halted run or an open
			// breaker are not the chunk's.
			j.Delivered = max(1, j.Delivered-int(s.held))
		}
		k := key{c.DocID, c.ChunkIndex}
		v := screenVerdict(sighting{state: s, chunk: *c, delivered: j.Delivered, replay: j.Replay,
			finalAttempt: j.FinalAttempt, maxDeliveries: p.budget(c.SourceID).maxDeliveries, seen: seen[k]})
		switch v {
		case verdictLive:
			seen[k] = true
			if s.lastClass != nil {
				j.prevClass = *s.lastClass
			}
			live = append(live, j)
		case verdictSuperseded:
			superseded = append(superseded, j)
		case verdictHold:
			held = append(held, j)
		}
		p.settle(j, s, v)
	}
	if err := p.markSuperseded(ctx, superseded); err != nil {
		return nil, err
	}
	if err := p.markHeld(ctx, held); err != nil {
		return nil, err
	}
	return live, nil
}

// settle carries out the screen's verdict on a job that needs no work.
func (p *Pipeline) settle(j *Job, s state, v verdict) {
	c := &j.chunk
	switch v {
	case verdictUnknown:
		p.fail(j, StageDecode, classify.Permanentf(classify.ClassInvalidMessage,
			"no manifest row for chunk %d of document %s: the job was not published by a producer of this database", c.ChunkIndex, c.DocID))
	case verdictSuperseded:
		j.Outcome = Superseded
	case verdictRacedCommit:
		j.Outcome, j.Delay = Retry, time.Second
	case verdictDuplicate:
		j.Outcome = Duplicate
	case verdictHold:
		j.Outcome, j.Delay = Retry, p.cfg.HoldDelay
	case verdictRunCancelled:
		p.fail(j, StageRun, classify.Permanent(classify.ClassRunCancelled, fmt.Errorf("run %s %s", c.RunID, s.reason())))
	case verdictOverCap:
		cls := classify.ClassUnknown
		if s.lastClass != nil {
			cls = *s.lastClass
		}
		p.fail(j, StageCap, classify.Retryable(cls, fmt.Errorf("delivery %d exceeds the cap of %d", j.Delivered, p.budget(c.SourceID).maxDeliveries)))
	}
}

// readStates reads what the manifest, documents and ingest_runs say about
// each job, in the jobs' order.
func (p *Pipeline) readStates(ctx context.Context, jobs []*Job) ([]state, error) {
	docIDs := make([]string, len(jobs))
	indexes := make([]int32, len(jobs))
	runIDs := make([]string, len(jobs))
	for i, j := range jobs {
		docIDs[i], indexes[i], runIDs[i] = j.chunk.DocID, int32(j.chunk.ChunkIndex), j.chunk.RunID
	}
	rows, err := p.pool.Query(ctx, `
		SELECT t.ord, m.version, m.status, m.replay_gen, m.last_error_class, d.version,
		       coalesce(m.held_deliveries, 0), r.status, r.halted_reason
		FROM unnest($1::text[], $2::int4[], $3::text[]) WITH ORDINALITY AS t(doc_id, chunk_index, run_id, ord)
		LEFT JOIN ingest_manifest m ON m.doc_id = t.doc_id AND m.chunk_index = t.chunk_index
		LEFT JOIN documents d ON d.doc_id = t.doc_id
		LEFT JOIN ingest_runs r ON r.run_id = t.run_id`, docIDs, indexes, runIDs)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	states := make([]state, len(jobs))
	for rows.Next() {
		var ord int
		var s state
		if err := rows.Scan(&ord, &s.version, &s.status, &s.replayGen, &s.lastClass, &s.docVersion,
			&s.held, &s.runStatus, &s.runReason); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		states[ord-1] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return states, nil
}

// state is what the manifest, documents and ingest_runs say about a job.
type state struct {
	version, docVersion *int64
	status              *manifest.Status
	lastClass           *string
	replayGen           *int32
	held                int32
	runStatus           *runs.Status
	runReason           *string
}

func (s state) runHalted() bool    { return s.runStatus != nil && *s.runStatus == runs.Halted }
func (s state) runCancelled() bool { return s.runStatus != nil && *s.runStatus == runs.Cancelled }

func (s state) reason() string {
	if s.runReason == nil {
		return string(runs.Cancelled)
	}
	return *s.runReason
}

// markHeld counts a delivery of each job held, for its halted run or an
// open breaker, so that the delivery cap, read from JetStream's delivery
// count, never charges it to the chunk.
func (p *Pipeline) markHeld(ctx context.Context, jobs []*Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := manifest.Hold(ctx, p.pool, chunksOf(jobs)); err != nil {
		return fmt.Errorf("mark held: %w", err)
	}
	p.metrics.Held.Add(float64(len(jobs)))
	return nil
}

// markSuperseded records that pending chunks of an older version will
// never be stored: the reconciler must not count them as owed work.
func (p *Pipeline) markSuperseded(ctx context.Context, jobs []*Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := manifest.SupersedePending(ctx, p.pool, chunksOf(jobs)); err != nil {
		return fmt.Errorf("mark superseded: %w", err)
	}
	return nil
}

// chunksOf names the jobs' manifest rows.
func chunksOf(jobs []*Job) manifest.Chunks {
	c := manifest.MakeChunks(len(jobs))
	for _, j := range jobs {
		c.Add(j.chunk.DocID, j.chunk.ChunkIndex, j.chunk.DocVersion)
	}
	return c
}
