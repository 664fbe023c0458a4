package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// parkAll commits every Parked job's failure in one fresh transaction —
// failure bookkeeping must not depend on the work transaction, which may
// have rolled back — then calls the after-park crash point.
func (p *Pipeline) parkAll(ctx context.Context, jobs []*Job) error {
	var parked []*Job
	for _, j := range jobs {
		if j.Outcome == Parked {
			parked = append(parked, j)
		}
	}
	if len(parked) == 0 {
		return p.recordAttempts(ctx, jobs)
	}
	// In key order, so that the documents too are locked in the order
	// every other transaction takes them.
	slices.SortFunc(parked, func(a, b *Job) int {
		return cmp.Or(strings.Compare(a.chunk.DocID, b.chunk.DocID), cmp.Compare(a.chunk.ChunkIndex, b.chunk.ChunkIndex))
	})
	var dead []messages.DeadLetter
	if err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) (err error) {
		dead, err = p.park(ctx, tx, parked)
		return err
	}); err != nil {
		return fmt.Errorf("park: %w", err)
	}
	p.reportParked(dead)
	p.crash("after-park-before-term")
	return p.recordAttempts(ctx, jobs)
}

// park records the jobs' failures with one statement for each table:
// their manifest rows go to parked, their documents to failed, and their
// dead letters into the outbox, and returns the dead letters it wrote,
// for reportParked once tx has committed. A job already parked for this
// version and replay generation writes nothing, so a redelivery after a
// crash cannot create a second dead letter.
//
// The documents are locked first, in key order as every transaction
// locks them: a job of a document deleted meanwhile is stale, and
// writes nothing of its text back (no dead letter, no escalated text).
func (p *Pipeline) park(ctx context.Context, tx pgx.Tx, jobs []*Job) ([]messages.DeadLetter, error) {
	jobs, err := p.leaveOutDeleted(ctx, tx, jobs)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	dls, write, err := p.moveToParked(ctx, tx, jobs)
	if err != nil {
		return nil, err
	}
	var docs []string
	var versions []int64
	var dead []messages.DeadLetter
	var escalated []manifest.Escalated
	for i, j := range jobs {
		if !write[i] {
			continue
		}
		if j.chunk.DocID != "" {
			docs, versions = append(docs, j.chunk.DocID), append(versions, j.chunk.DocVersion)
		}
		dl := dls[i]
		if dl.Disposition == messages.DispositionEscalate && j.chunk.DocID != "" {
			e, err := redact(j, &dl)
			if err != nil {
				return nil, err
			}
			escalated = append(escalated, e)
		}
		dead = append(dead, dl)
	}
	if len(docs) > 0 {
		if err := manifest.FailDocuments(ctx, tx, docs, versions); err != nil {
			return nil, err
		}
	}
	if err := manifest.KeepEscalatedText(ctx, tx, escalated); err != nil {
		return nil, err
	}
	if err := manifest.RedactJobs(ctx, tx, escalated); err != nil {
		return nil, err
	}
	if err := deadletter.Write(ctx, tx, dead); err != nil {
		return nil, err
	}
	return dead, nil
}

// moveToParked builds each job's dead letter and moves the manifest rows
// of the jobs that name a chunk to parked. write[i] says whether jobs[i]'s
// dead letter is to be written: a job with no chunk to name always, one
// whose row did not move (already parked at this version and replay
// generation) only when it failed to decode.
func (p *Pipeline) moveToParked(ctx context.Context, tx pgx.Tx, jobs []*Job) (dls []messages.DeadLetter, write []bool, err error) {
	dls = make([]messages.DeadLetter, len(jobs))
	write = make([]bool, len(jobs))
	var fs []manifest.Failure
	var named []int // the position in jobs of each of fs
	for i, j := range jobs {
		dls[i] = p.deadLetter(j)
		if j.chunk.DocID == "" {
			write[i] = true
			continue
		}
		fs = append(fs, manifest.Failure{DocID: j.chunk.DocID, Index: j.chunk.ChunkIndex, Version: j.chunk.DocVersion,
			Attempts: dls[i].Attempts, Class: dls[i].ErrorClass, ReplayGen: dls[i].ReplayGen, Published: j.Published})
		named = append(named, i)
	}
	if len(fs) > 0 {
		moved, err := manifest.Park(ctx, tx, fs)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range named {
			write[i] = moved[k] || jobs[i].Failure.Stage == StageDecode
		}
	}
	return dls, write, nil
}

// reportParked counts and logs the parks of dead, whose transaction has
// committed: a park rolled back leaves no record of itself.
func (p *Pipeline) reportParked(dead []messages.DeadLetter) {
	for _, dl := range dead {
		p.metrics.Parked.WithLabelValues(dl.Disposition, dl.ErrorClass).Inc()
		ChunkFields(p.log.Warn(), dl.DocID, dl.ChunkIndex, dl.DocVersion, dl.SourceID, dl.RunID).Str("disposition", dl.Disposition).
			Str("error_class", dl.ErrorClass).Str("stage", dl.Stage).Int("attempts", dl.Attempts).Msg("chunk parked")
	}
}

// leaveOutDeleted locks the documents of jobs and returns the jobs
// whose document is not deleted.
func (p *Pipeline) leaveOutDeleted(ctx context.Context, tx pgx.Tx, jobs []*Job) ([]*Job, error) {
	var docs []string
	for _, j := range jobs {
		if id := j.chunk.DocID; id != "" && (len(docs) == 0 || docs[len(docs)-1] != id) {
			docs = append(docs, id)
		}
	}
	if len(docs) == 0 {
		return jobs, nil
	}
	deleted, err := manifest.Deleted(ctx, tx, docs)
	if err != nil || len(deleted) == 0 {
		return jobs, err
	}
	kept := jobs[:0:0]
	for _, j := range jobs {
		if deleted[j.chunk.DocID] {
			j.Outcome = Superseded
			continue
		}
		kept = append(kept, j)
	}
	return kept, nil
}

// redact makes an escalated job's dead letter carry the redacted job
// (messages.Redacted) instead of the original, and returns what the
// manifest keeps of it: the text for escalated_chunks, and the redacted
// job for the manifest row.
func redact(j *Job, dl *messages.DeadLetter) (manifest.Escalated, error) {
	c := &j.chunk
	rule := cmp.Or(dl.ErrorCode, dl.ErrorClass)
	job, err := messages.Redacted(*c, rule)
	if err != nil {
		return manifest.Escalated{}, fmt.Errorf("redact chunk %d of %s: %w", c.ChunkIndex, c.DocID, err)
	}
	raw, err := job.Encode()
	if err != nil {
		return manifest.Escalated{}, fmt.Errorf("redact chunk %d of %s: %w", c.ChunkIndex, c.DocID, err)
	}
	dl.Payload = raw
	return manifest.Escalated{DocID: c.DocID, Index: c.ChunkIndex, Version: c.DocVersion, Rule: rule,
		Text: c.Text, Job: raw, Hash: job.ContentHash}, nil
}

// deadLetter builds the dead letter for a parked job.
func (p *Pipeline) deadLetter(j *Job) messages.DeadLetter {
	f, c := j.Failure, &j.chunk
	t := deadLetterTerms(parking{disposition: f.Decision.Disposition, parkedClass: f.ParkedClass,
		delivered: j.Delivered, replayGen: c.ReplayGen, maxReplays: p.budget(c.SourceID).maxReplays})
	if !t.keepRetryAt {
		f.NextRetryAt = nil
	}
	dl := messages.DeadLetter{
		Schema:         messages.DeadLetterSchema,
		DocID:          c.DocID,
		ChunkIndex:     c.ChunkIndex,
		DocVersion:     c.DocVersion,
		SourceID:       c.SourceID,
		SourceNativeID: c.SourceNativeID,
		RunID:          c.RunID,
		Disposition:    t.disposition,
		ErrorClass:     t.class,
		ErrorCode:      f.Decision.Code,
		ErrorDetail:    messages.TruncateDetail(f.Err.Error()),
		Stage:          f.Stage,
		Attempts:       t.attempts,
		ReplayGen:      c.ReplayGen,
		FailedAt:       p.now().UTC(),
		NextRetryAt:    f.NextRetryAt,
		Payload:        j.Raw,
	}
	if dl.DocID == "" {
		p.nameUndecodable(j, &dl)
	}
	dl.DeadLetterID = messages.DeadLetterID(dl.DocID, dl.ChunkIndex)
	return dl
}

// nameUndecodable identifies a job that could not be decoded from its
// message id, or failing that its stream sequence, so that it still gets
// exactly one triageable dead letter.
func (p *Pipeline) nameUndecodable(j *Job, dl *messages.DeadLetter) {
	if docID, index, version, err := messages.ParseChunkMsgID(j.MsgID); err == nil {
		dl.DocID, dl.ChunkIndex, dl.DocVersion = docID, index, version
	} else {
		dl.DocID = "undecodable-" + strconv.FormatUint(j.Seq, 10)
	}
	if dl.SourceID == "" {
		dl.SourceID = "unknown"
	}
}

// recordAttempts notes the attempt count and error class of jobs going back
// for another delivery, so a later delivery past the cap, or an operator,
// knows why, and counts the held ones' deliveries as held.
func (p *Pipeline) recordAttempts(ctx context.Context, jobs []*Job) error {
	var chunks manifest.Chunks
	var attempts []int32
	var classes []string
	var held []*Job
	for _, j := range jobs {
		if j.Outcome != Retry || j.Failure == nil || j.chunk.DocID == "" {
			continue
		}
		chunks.Add(j.chunk.DocID, j.chunk.ChunkIndex, j.chunk.DocVersion)
		attempts = append(attempts, int32(j.Delivered))
		classes = append(classes, j.Failure.Decision.Class)
		if j.held {
			held = append(held, j)
		}
	}
	if chunks.Len() == 0 {
		return nil
	}
	if err := manifest.RecordAttempts(ctx, p.pool, chunks, attempts, classes); err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	return p.markHeld(ctx, held)
}
