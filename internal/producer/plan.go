package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/chunk"
	"github.com/sluicehq/sluice/internal/corpus"
	"github.com/sluicehq/sluice/internal/pipeline"
	"github.com/sluicehq/sluice/internal/secrets"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// plan is what one batch will write and publish.
type plan struct {
	docs      []plannedDoc
	jobs      []plannedJob
	parked    []messages.DeadLetter
	escalated []escalation
	parkDoc   map[string]bool
}

// escalation is a chunk held back because it touches a secret: its job
// and dead letter carry redacted text, and the real text is kept once, in
// escalated_chunks.
type escalation struct {
	job  plannedJob
	dl   messages.DeadLetter
	rule string
	text string
}

type plannedDoc struct {
	docID, nativeID, hash, status, codec string
	version                              int64
	chunkCount                           int
	metadata                             json.RawMessage
}

type plannedJob struct {
	docID, msgID, hash string
	index              int
	version            int64
	raw                []byte
}

// statusPending is the document status of a version with chunks to embed.
const statusPending = "pending"

type existing struct {
	version int64
	hash    string
}

// plan reads the batch's documents' current state and decides, per
// document, whether it is new, changed, unchanged, empty or failed.
func (p *Producer) plan(ctx context.Context, docs []corpus.Document, sum *Summary) (*plan, error) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = messages.DocID(p.cfg.SourceID, d.NativeID)
	}
	current := map[string]existing{}
	rows, err := p.pool.Query(ctx, `SELECT doc_id, version, content_hash FROM documents WHERE doc_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	for rows.Next() {
		var id string
		var e existing
		if err := rows.Scan(&id, &e.version, &e.hash); err != nil {
			rows.Close()
			return nil, err
		}
		current[id] = e
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}

	pl := &plan{parkDoc: map[string]bool{}}
	now := p.now().UTC()
	for i, d := range docs {
		docID := ids[i]
		meta, hash, rejected := p.admit(d)
		cur, seen := current[docID]
		if seen && cur.hash == hash {
			sum.Unchanged++
			continue
		}
		version := int64(1)
		if seen {
			version = cur.version + 1
			sum.Changed++
		} else {
			sum.New++
		}
		pd := plannedDoc{docID: docID, nativeID: messages.StorableNativeID(d.NativeID), hash: hash, codec: d.Codec, version: version, metadata: meta}
		if rejected == nil && d.Status == corpus.StatusOK {
			jobs, escalated, err := p.chunkJobs(docID, d, version, meta, now)
			switch {
			case err != nil:
				rejected = err
			case len(jobs)+len(escalated) == 0:
				pd.status = "empty"
				sum.Empty++
			default:
				pd.status, pd.chunkCount = statusPending, len(jobs)+len(escalated)
				if len(jobs) == 0 {
					pd.status = "failed"
				}
				pl.jobs = append(pl.jobs, jobs...)
				pl.escalated = append(pl.escalated, escalated...)
				sum.ParkedDocs += len(escalated)
			}
		} else if rejected == nil && d.Status == corpus.StatusEmpty {
			pd.status = "empty"
			sum.Empty++
		}
		if pd.status == "" {
			pd.status, pd.chunkCount, pd.metadata = "failed", 1, nil
			pl.parked = append(pl.parked, p.unreadable(docID, d, version, now, rejected))
			pl.parkDoc[docID] = true
			sum.Failed++
			sum.ParkedDocs++
		}
		pl.docs = append(pl.docs, pd)
	}
	return pl, nil
}

// admit checks what a document's jobs will carry besides text: its native
// id and its metadata. It returns the canonical metadata and the
// document's hash, and, for a document it rejects, the classified reason;
// a rejected document is parked alone, and the run goes on.
func (p *Producer) admit(d corpus.Document) (json.RawMessage, string, error) {
	var rejected error
	meta, err := metadataJSON(d.Metadata)
	switch {
	case messages.ValidateNativeID(d.NativeID) != nil:
		rejected = classify.Permanent(classify.ClassInvalidMessage,
			fmt.Errorf("document id: %w", messages.ValidateNativeID(d.NativeID)))
	case err != nil:
		rejected = classify.Permanent(classify.ClassInvalidMessage, fmt.Errorf("metadata: %w", err))
	case len(meta) > messages.MaxMetadataBytes:
		rejected = classify.Permanentf(classify.ClassTooLarge, "metadata is %d bytes, over the %d-byte limit", len(meta), messages.MaxMetadataBytes)
	}
	if rejected != nil {
		meta = nil
	}
	hash, err := documentHash(d, meta, rejected)
	if err != nil {
		// Only the text can fail to hash; a valid document's text always
		// hashes, so this document is as unreadable as it gets.
		rejected = classify.Permanent(classify.ClassInvalidEncoding, err)
		hash, _ = documentHash(d, nil, rejected)
	}
	return meta, hash, rejected
}

// chunkJobs splits a readable document and encodes a job per chunk. A
// chunk whose job cannot be encoded (over the message limit, say) rejects
// the whole document: half a document is never published. The whole
// document and its metadata are screened for secrets before anything
// leaves: every chunk a secret touches is escalated instead of published,
// so no part of a secret reaches NATS, the embedder or the vector store.
func (p *Producer) chunkJobs(docID string, d corpus.Document, version int64, meta json.RawMessage, now time.Time) ([]plannedJob, []escalation, error) {
	chunks := chunk.Split(d.Text, p.cfg.Chunk)
	spans := make([]secrets.Span, len(chunks))
	for i, c := range chunks {
		spans[i] = secrets.Span{Start: c.Start, End: c.End}
	}
	flagged := map[int]string{}
	for _, f := range secrets.ScanDocument(d.Text, d.Metadata, spans) {
		if _, ok := flagged[f.Chunk]; !ok {
			flagged[f.Chunk] = f.Rule
		}
	}
	jobs := make([]plannedJob, 0, len(chunks))
	var escalated []escalation
	for i, c := range chunks {
		if rule, ok := flagged[i]; ok {
			e, err := p.escalate(docID, d, c, len(chunks), version, rule, now)
			if err != nil {
				return nil, nil, err
			}
			escalated = append(escalated, e)
			continue
		}
		job, err := p.job(docID, d, c, len(chunks), version, meta, now)
		if err != nil {
			class := classify.ClassInvalidMessage
			if errors.Is(err, messages.ErrOversize) {
				class = classify.ClassTooLarge
			}
			return nil, nil, classify.Permanent(class, err)
		}
		jobs = append(jobs, job)
	}
	return jobs, escalated, nil
}

// escalate builds the escalation of a chunk that touches a secret: a job
// whose text is a redaction naming the rule and which carries no
// metadata, and its dead letter.
func (p *Producer) escalate(docID string, d corpus.Document, c chunk.Chunk, count int, version int64, rule string, now time.Time) (escalation, error) {
	redacted := c
	redacted.Text = "[redacted: " + rule + "]"
	job, err := p.job(docID, d, redacted, count, version, nil, now)
	if err != nil {
		return escalation{}, classify.Permanent(classify.ClassInvalidMessage, err)
	}
	return escalation{job: job, rule: rule, text: c.Text, dl: messages.DeadLetter{
		Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(docID, c.Index),
		DocID: docID, ChunkIndex: c.Index, DocVersion: version, SourceID: p.cfg.SourceID,
		SourceNativeID: messages.StorableNativeID(d.NativeID), RunID: p.cfg.RunID,
		Disposition: messages.DispositionEscalate, ErrorClass: classify.ClassPolicyViolation, ErrorCode: rule,
		ErrorDetail: "the document holds a secret (" + rule + ") that this chunk touches; its text is withheld",
		Stage:       "screen", Attempts: 1, FailedAt: now, Payload: job.raw,
	}}, nil
}

func (p *Producer) job(docID string, d corpus.Document, c chunk.Chunk, count int, version int64, meta json.RawMessage, now time.Time) (plannedJob, error) {
	hash, err := messages.ContentHash(c.Text, meta)
	if err != nil {
		return plannedJob{}, err
	}
	cj := messages.ChunkJob{
		Schema: messages.ChunkJobSchema, DocID: docID, ChunkIndex: c.Index, DocVersion: version, ChunkCount: count,
		SourceID: p.cfg.SourceID, SourceNativeID: messages.StorableNativeID(d.NativeID), RunID: p.cfg.RunID, ContentHash: hash,
		Text: c.Text, Metadata: meta, Codec: d.Codec, PublishedAt: now,
	}
	raw, err := cj.Encode()
	if err != nil {
		return plannedJob{}, fmt.Errorf("document %s chunk %d: %w", d.NativeID, c.Index, err)
	}
	return plannedJob{docID: docID, msgID: messages.ChunkMsgID(docID, c.Index, version), hash: hash,
		index: c.Index, version: version, raw: raw}, nil
}

// unreadable is the dead letter of a document that could not be read,
// decoded or admitted (rejected, when not nil, says why). There is no job
// to carry, so the payload describes the document instead.
func (p *Producer) unreadable(docID string, d corpus.Document, version int64, now time.Time, rejected error) messages.DeadLetter {
	class := classify.ClassInvalidMessage
	switch {
	case errors.Is(d.Err, corpus.ErrTooLarge):
		class = classify.ClassTooLarge
	case d.Status == corpus.StatusUndecodable:
		class = classify.ClassInvalidEncoding
	}
	detail := "unreadable document"
	if d.Err != nil {
		detail = d.Err.Error()
	}
	if rejected != nil {
		class, detail = classify.Classify(rejected).Class, rejected.Error()
	}
	nativeID := messages.StorableNativeID(d.NativeID)
	payload, _ := json.Marshal(map[string]any{"source_native_id": nativeID, "bytes": d.Size, "status": string(d.Status)})
	return messages.DeadLetter{
		Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(docID, 0),
		DocID: docID, ChunkIndex: 0, DocVersion: version, SourceID: p.cfg.SourceID, SourceNativeID: nativeID,
		RunID: p.cfg.RunID, Disposition: messages.DispositionQuarantine, ErrorClass: class,
		ErrorDetail: messages.TruncateDetail(detail),
		Stage:       "produce", Attempts: 1, FailedAt: now, Payload: payload,
	}
}

// documentHash identifies a document's content, so an unchanged document
// is skipped. Unreadable and rejected documents hash their status, size
// and reason: re-running over the same bad record does not park it again.
func documentHash(d corpus.Document, meta json.RawMessage, rejected error) (string, error) {
	text := d.Text
	if d.Status != corpus.StatusOK || rejected != nil {
		reason := ""
		if rejected != nil {
			reason = classify.Classify(rejected).Class
		}
		text = fmt.Sprintf("\x00%s:%d:%s", d.Status, d.Size, reason)
	}
	return messages.ContentHash(text, meta)
}

// record writes the batch's documents and manifest rows, and the dead
// letters of unreadable documents, in one transaction.
func (p *Producer) record(ctx context.Context, pl *plan) error {
	if len(pl.docs) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		n := len(pl.docs)
		ids, natives, hashes, statuses, codecs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		versions, counts, metas := make([]int64, n), make([]int32, n), make([]string, n)
		for i, d := range pl.docs {
			ids[i], natives[i], hashes[i], statuses[i], codecs[i] = d.docID, d.nativeID, d.hash, d.status, d.codec
			versions[i], counts[i] = d.version, int32(d.chunkCount)
			metas[i] = "{}"
			if len(d.metadata) > 0 {
				metas[i] = string(d.metadata)
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status, codec, metadata)
			SELECT t.doc_id, $1, t.native, $2, t.version, t.hash, t.chunks, t.status, NULLIF(t.codec, ''), t.meta::jsonb
			FROM unnest($3::text[], $4::text[], $5::int8[], $6::text[], $7::int4[], $8::text[], $9::text[], $10::text[])
			     AS t(doc_id, native, version, hash, chunks, status, codec, meta)
			ON CONFLICT (doc_id) DO UPDATE SET run_id = EXCLUDED.run_id, version = EXCLUDED.version,
			    content_hash = EXCLUDED.content_hash, chunk_count = EXCLUDED.chunk_count, status = EXCLUDED.status,
			    codec = EXCLUDED.codec, metadata = EXCLUDED.metadata, updated_at = now()
			WHERE documents.version < EXCLUDED.version`,
			p.cfg.SourceID, p.cfg.RunID, ids, natives, versions, hashes, counts, statuses, codecs, metas); err != nil {
			return fmt.Errorf("record documents: %w", err)
		}
		if err := supersede(ctx, tx, pl, ids, versions, counts); err != nil {
			return err
		}
		if err := p.recordManifest(ctx, tx, pl); err != nil {
			return err
		}
		if err := recordEscalations(ctx, tx, pl.escalated); err != nil {
			return err
		}
		for _, dl := range pl.parked {
			if _, err := tx.Exec(ctx, `
				INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, last_error_class, run_id, job)
				VALUES ($1, 0, $2, '', 'parked', 1, $3, $4, $5)
				ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, status = 'parked',
				    attempts = 1, last_error_class = EXCLUDED.last_error_class, run_id = EXCLUDED.run_id,
				    job = EXCLUDED.job, replay_gen = 0, updated_at = now()`,
				dl.DocID, dl.DocVersion, dl.ErrorClass, dl.RunID, dl.Payload); err != nil {
				return fmt.Errorf("park %s: %w", dl.SourceNativeID, err)
			}
			if err := pipeline.WriteDeadLetter(ctx, tx, dl); err != nil {
				return err
			}
		}
		return nil
	})
}

func (p *Producer) recordManifest(ctx context.Context, tx pgx.Tx, pl *plan) error {
	if len(pl.jobs) == 0 {
		return nil
	}
	n := len(pl.jobs)
	ids, hashes := make([]string, n), make([]string, n)
	indexes, versions, raws := make([]int32, n), make([]int64, n), make([][]byte, n)
	for i, j := range pl.jobs {
		ids[i], hashes[i], indexes[i], versions[i], raws[i] = j.docID, j.hash, int32(j.index), j.version, j.raw
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job)
		SELECT t.doc_id, t.chunk_index, t.version, t.hash, 'pending', $1, t.job
		FROM unnest($2::text[], $3::int4[], $4::int8[], $5::text[], $6::bytea[]) AS t(doc_id, chunk_index, version, hash, job)
		ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, content_hash = EXCLUDED.content_hash,
		    status = 'pending', attempts = 0, last_error_class = NULL, replay_gen = 0, run_id = EXCLUDED.run_id,
		    job = EXCLUDED.job, published_at = NULL, publish_seq = NULL, publish_gen = 0, updated_at = now()
		WHERE ingest_manifest.version < EXCLUDED.version`,
		p.cfg.RunID, ids, indexes, versions, hashes, raws)
	if err != nil {
		return fmt.Errorf("record manifest: %w", err)
	}
	return nil
}

// supersede clears what older versions of the batch's documents leave
// behind. Manifest rows beyond a new, shorter chunk count will never be
// stored again: they become superseded. Every unresolved dead letter of
// an older version is resolved as superseded, so it is neither replayed
// nor counted as ready to replay; the new version gets dead letters of its
// own if it fails. A document whose new version is empty or unreadable
// has nothing left to search: its old vectors go at once. One with a new
// version to embed keeps its old version searchable until the new one is
// complete (see the pipeline's completion).
func supersede(ctx context.Context, tx pgx.Tx, pl *plan, ids []string, versions []int64, counts []int32) error {
	if _, err := tx.Exec(ctx, `
		UPDATE ingest_manifest m SET status = 'superseded', updated_at = now()
		FROM unnest($1::text[], $2::int8[], $3::int4[]) AS t(doc_id, version, chunks)
		WHERE m.doc_id = ANY($1) AND m.doc_id = t.doc_id AND m.version < t.version
		  AND m.chunk_index >= t.chunks AND m.status <> 'superseded'`,
		ids, versions, counts); err != nil {
		return fmt.Errorf("supersede old chunks: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE dead_letters d SET resolved_at = now(), resolution = 'superseded'
		FROM unnest($1::text[], $2::int8[]) AS t(doc_id, version)
		WHERE d.doc_id = ANY($1) AND d.doc_id = t.doc_id AND d.version < t.version AND d.resolved_at IS NULL`,
		ids, versions); err != nil {
		return fmt.Errorf("resolve superseded dead letters: %w", err)
	}
	var gone []string
	for _, d := range pl.docs {
		if d.status != statusPending && d.version > 1 {
			gone = append(gone, d.docID)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM chunk_embeddings WHERE doc_id = ANY($1)`, gone); err != nil {
		return fmt.Errorf("prune chunks of emptied documents: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM chunk_embeddings_previous WHERE doc_id = ANY($1)`, gone); err != nil {
		return fmt.Errorf("prune chunks of emptied documents: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE documents SET live_version = NULL WHERE doc_id = ANY($1)`, gone); err != nil {
		return fmt.Errorf("prune chunks of emptied documents: %w", err)
	}
	return nil
}

// recordEscalations parks escalated chunks: the manifest row holds the
// redacted job, the outbox its dead letter, and escalated_chunks the one
// copy of the real text.
func recordEscalations(ctx context.Context, tx pgx.Tx, es []escalation) error {
	for _, e := range es {
		if _, err := tx.Exec(ctx, `
			INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, last_error_class, run_id, job)
			VALUES ($1, $2, $3, $4, 'parked', 1, $5, $6, $7)
			ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, content_hash = EXCLUDED.content_hash,
			    status = 'parked', attempts = 1, last_error_class = EXCLUDED.last_error_class, run_id = EXCLUDED.run_id,
			    job = EXCLUDED.job, replay_gen = 0, published_at = NULL, publish_seq = NULL, publish_gen = 0, updated_at = now()
			WHERE ingest_manifest.version < EXCLUDED.version`,
			e.job.docID, e.job.index, e.job.version, e.job.hash, classify.ClassPolicyViolation, e.dl.RunID, e.job.raw); err != nil {
			return fmt.Errorf("escalate chunk %d of %s: %w", e.job.index, e.dl.SourceNativeID, err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, e.job.docID, e.job.index, e.job.version, e.rule, e.text); err != nil {
			return fmt.Errorf("escalate chunk %d of %s: %w", e.job.index, e.dl.SourceNativeID, err)
		}
		if err := pipeline.WriteDeadLetter(ctx, tx, e.dl); err != nil {
			return err
		}
	}
	return nil
}
