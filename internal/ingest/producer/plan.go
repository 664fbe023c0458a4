package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// plan is what one batch will write and publish.
type plan struct {
	docs      []plannedDoc
	jobs      []plannedJob
	parked    []messages.DeadLetter
	escalated []escalation
	parkDoc   map[string]bool
	// unchanged are the doc ids of documents read as they were recorded:
	// nothing to write but the run that read them.
	unchanged []string
	// recuts are the cuts of the batch's documents for the recut index
	// generations that lack them.
	recuts []recutPlan
	// files are the batch's whole-file documents, each with the class it
	// is parked in ("" when it was read) and what OCR made of it.
	files []fileOutcome
	// keep are the parked whole files whose bytes are kept, by doc id.
	keep map[string]fileToKeep
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
	docID, nativeID, hash, codec string
	status                       manifest.DocStatus
	version                      int64
	chunkCount                   int
	metadata                     json.RawMessage
}

type plannedJob struct {
	docID, msgID, hash string
	index              int
	version            int64
	raw                []byte
}

// plan reads the batch's documents' current state and decides, per
// document, whether it is new, changed, unchanged, empty or failed.
func (p *Producer) plan(ctx context.Context, docs []corpus.Document, sum *Summary) (*plan, error) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = messages.DocID(p.cfg.SourceID, d.NativeID)
	}
	current, err := manifest.ReadDocuments(ctx, p.pool, ids)
	if err != nil {
		return nil, err
	}
	if err := p.dedupe(ctx, docs, ids, current); err != nil {
		return nil, err
	}
	pl := &plan{parkDoc: map[string]bool{}}
	var fileIDs []string
	now := p.now().UTC()
	for i, d := range docs {
		docID := ids[i]
		meta, hash, rejected := corpus.Admit(d)
		if d.File != "" || d.Metadata["origin"] == KeyedOrigin {
			// A file parked before stays parked when it is read unchanged.
			class := ""
			if rejected != nil || (d.Status != corpus.StatusOK && d.Status != corpus.StatusEmpty) {
				class, _, _ = parkedAs(d, rejected)
			}
			pl.files = append(pl.files, outcomeOf(d, class))
			fileIDs = append(fileIDs, docID)
		}
		cur, seen := current[docID]
		if seen && cur.Hash == hash && !p.cfg.Reread {
			pl.unchanged = append(pl.unchanged, docID)
			sum.Unchanged++
			continue
		}
		version := int64(1)
		if seen {
			version = cur.Version + 1
			sum.Changed++
		} else {
			sum.New++
		}
		pd := plannedDoc{docID: docID, nativeID: messages.StorableNativeID(d.NativeID), hash: hash, codec: d.Codec, version: version, metadata: meta}
		if rejected == nil && d.Status == corpus.StatusOK {
			rejected = p.planChunks(pl, &pd, d, meta, now, sum)
		} else if rejected == nil && d.Status == corpus.StatusEmpty {
			pd.status = manifest.DocEmpty
			sum.Empty++
		}
		if pd.status == "" {
			pd.status, pd.chunkCount, pd.metadata = manifest.DocFailed, 1, nil
			pl.park(p.unreadable(docID, d, version, now, rejected), d)
			pl.parkDoc[docID] = true
			sum.Failed++
			sum.ParkedDocs++
		}
		pl.docs = append(pl.docs, pd)
	}
	pl.parkedFiles(fileIDs)
	if err := p.planCuts(ctx, docs, ids, current, pl); err != nil {
		return nil, err
	}
	return pl, nil
}

// parkedFiles gives the whole-file documents the plan parks for a reason
// found after they were read (a chunk over the message limit) their
// dead letter's class; ids are their doc ids, in the order of pl.files.
func (pl *plan) parkedFiles(ids []string) {
	for i, id := range ids {
		if pl.files[i].class != "" || !pl.parkDoc[id] {
			continue
		}
		for _, dl := range pl.parked {
			if dl.DocID == id {
				pl.files[i].class = dl.ErrorClass
			}
		}
	}
}

// ErrDuplicateID matches documents whose native id the run had already
// read: the same relative path under two inputs, or an id repeated in
// JSONL. The first keeps the id.
var ErrDuplicateID = errors.New("duplicate native id")

// dedupe renames each document of docs whose native id this run has
// already read, earlier in the batch or in an earlier one, to the first
// "<id>#dupK" (K from 2) the run has not, and makes it StatusInvalid
// with an error matching ErrDuplicateID: letting it through would
// overwrite the first with an unrelated document. ids and current follow
// the new names. An earlier batch's documents are known by their rows'
// run id (see manifest.MarkRead), so a run of millions of documents
// holds none of their ids in memory.
func (p *Producer) dedupe(ctx context.Context, docs []corpus.Document, ids []string, current map[string]manifest.DocumentState) error {
	read := make(map[string]bool, len(docs))
	for i := range docs {
		if read[ids[i]] || current[ids[i]].RunID == p.cfg.RunID {
			first := docs[i].NativeID
			name, id, err := p.freeName(ctx, first, read, current)
			if err != nil {
				return err
			}
			docs[i].NativeID, ids[i] = name, id
			docs[i].Text, docs[i].Status = "", corpus.StatusInvalid
			docs[i].Err = fmt.Errorf("%w: %q was already read earlier in this run", ErrDuplicateID, first)
		}
		read[ids[i]] = true
	}
	return nil
}

// freeName returns the first "<first>#dupK" native id, K from 2, that
// this run has not read, and its doc id, adding its state to current.
func (p *Producer) freeName(ctx context.Context, first string, read map[string]bool, current map[string]manifest.DocumentState) (string, string, error) {
	for k := 2; ; k++ {
		name := fmt.Sprintf("%s#dup%d", first, k)
		id := messages.DocID(p.cfg.SourceID, name)
		if read[id] {
			continue
		}
		st, err := manifest.ReadDocuments(ctx, p.pool, []string{id})
		if err != nil {
			return "", "", err
		}
		if st[id].RunID == p.cfg.RunID {
			continue
		}
		if s, ok := st[id]; ok {
			current[id] = s
		}
		return name, id, nil
	}
}

// planChunks plans the jobs and escalations of readable document d and
// sets pd's status and chunk count: empty without chunks, pending with
// chunks to embed, failed when every chunk is escalated. It returns why
// d is rejected instead, leaving pd's status unset.
func (p *Producer) planChunks(pl *plan, pd *plannedDoc, d corpus.Document, meta json.RawMessage, now time.Time, sum *Summary) error {
	sum.countCodec(d.Codec)
	jobs, escalated, err := p.chunkJobs(pd.docID, d, pd.version, meta, now)
	switch {
	case err != nil:
		return err
	case len(jobs)+len(escalated) == 0:
		pd.status = manifest.DocEmpty
		sum.Empty++
	default:
		pd.status, pd.chunkCount = manifest.DocPending, len(jobs)+len(escalated)
		if len(jobs) == 0 {
			pd.status = manifest.DocFailed
		}
		pl.jobs = append(pl.jobs, jobs...)
		pl.escalated = append(pl.escalated, escalated...)
		sum.ParkedDocs += len(escalated)
		sum.Escalated += len(escalated)
	}
	return nil
}

// countCodec counts a new or changed document decoded from codec when
// that is not UTF-8.
func (s *Summary) countCodec(codec string) {
	if codec == "" || codec == corpus.CodecUTF8 {
		return
	}
	if s.Redecoded == nil {
		s.Redecoded = map[string]int{}
	}
	s.Redecoded[codec]++
}

// chunkJobs splits a readable document and encodes a job per chunk. A
// chunk whose job cannot be encoded (over the message limit, say) rejects
// the whole document: half a document is never published. The whole
// document and its metadata are screened for secrets before anything
// leaves: every chunk a secret touches is escalated instead of published,
// so no part of a secret reaches NATS, the embedder or the vector store.
func (p *Producer) chunkJobs(docID string, d corpus.Document, version int64, meta json.RawMessage, now time.Time) ([]plannedJob, []escalation, error) {
	chunks, flagged := p.splitScreened(d, p.cfg.Chunk)
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
		cm, err := d.ChunkMetadata(meta, c.Start, c.End)
		if err != nil {
			return nil, nil, classify.Permanent(classify.ClassInvalidMessage, fmt.Errorf("document %s chunk %d: metadata: %w", d.NativeID, c.Index, err))
		}
		job, err := p.job(docID, d, c, len(chunks), version, cm, now)
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

// splitScreened splits document d with cfg and screens it for secrets:
// flagged maps each chunk a secret touches to the first rule that found
// one in it.
func (p *Producer) splitScreened(d corpus.Document, cfg chunk.Config) (chunks []chunk.Chunk, flagged map[int]string) {
	chunks = chunk.Split(d.Text, cfg)
	spans := make([]secrets.Span, len(chunks))
	for i, c := range chunks {
		spans[i] = secrets.Span{Start: c.Start, End: c.End}
	}
	flagged = map[int]string{}
	for _, f := range p.cfg.Secrets.ScanDocument(d.Text, d.Metadata, spans) {
		if _, ok := flagged[f.Chunk]; !ok {
			flagged[f.Chunk] = f.Rule
		}
	}
	return chunks, flagged
}

// escalate builds the escalation of a chunk that touches a secret: a job
// whose text is a redaction naming the rule and which carries no
// metadata, and its dead letter.
func (p *Producer) escalate(docID string, d corpus.Document, c chunk.Chunk, count int, version int64, rule string, now time.Time) (escalation, error) {
	redacted := c
	redacted.Text = messages.RedactedText(rule)
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

// job encodes chunk c's job. meta is the chunk's metadata: the
// document's as corpus.Admit canonicalised it, once for all its chunks
// unless they carry their pages (corpus.Document.ChunkMetadata). The job is
// hashed and encoded in one call, which neither canonicalises it again
// nor hashes the text twice.
func (p *Producer) job(docID string, d corpus.Document, c chunk.Chunk, count int, version int64, meta json.RawMessage, now time.Time) (plannedJob, error) {
	cj := messages.ChunkJob{
		Schema: messages.ChunkJobSchema, DocID: docID, ChunkIndex: c.Index, DocVersion: version, ChunkCount: count,
		SourceID: p.cfg.SourceID, SourceNativeID: messages.StorableNativeID(d.NativeID), RunID: p.cfg.RunID,
		Text: c.Text, Metadata: meta, Codec: d.Codec, PublishedAt: now,
	}
	raw, err := cj.EncodeCanonical()
	if err != nil {
		return plannedJob{}, fmt.Errorf("document %s chunk %d: %w", d.NativeID, c.Index, err)
	}
	return plannedJob{docID: docID, msgID: messages.ChunkMsgID(docID, c.Index, version), hash: cj.ContentHash,
		index: c.Index, version: version, raw: raw}, nil
}

// parkedAs says why document d is parked (rejected, when not nil, says
// why it was refused after it was read): its error class, the error code
// that narrows it, and the detail for humans.
func parkedAs(d corpus.Document, rejected error) (class, code, detail string) {
	class = classify.ClassInvalidMessage
	switch {
	case errors.Is(d.Err, corpus.ErrTooLarge):
		class = classify.ClassTooLarge
	case errors.Is(d.Err, corpus.ErrUnsupportedFormat):
		class, code = classify.ClassUnsupportedFormat, string(d.Detected.Format)
	case d.Status == corpus.StatusUndecodable:
		class = classify.ClassInvalidEncoding
	case errors.As(d.Err, new(*extract.Error)):
		// The extraction's verdict, its page and detail in the message.
		class, code = classify.Classify(d.Err).Class, string(d.Detected.Format)
	default:
		var ce *classify.Error
		if errors.As(d.Err, &ce) {
			// An extractor's classified verdict.
			class, code = classify.Classify(d.Err).Class, ce.Code
		}
	}
	detail = "unreadable document"
	if d.Err != nil {
		detail = d.Err.Error()
	}
	if rejected != nil {
		class, code, detail = classify.Classify(rejected).Class, "", rejected.Error()
	}
	return class, code, detail
}

// ParkedClass is the error class document d, read but not readable, is
// parked in.
func ParkedClass(d corpus.Document) string {
	class, _, _ := parkedAs(d, nil)
	return class
}

// unreadable is the dead letter of a document that could not be read,
// decoded or admitted (rejected, when not nil, says why). There is no job
// to carry, so the payload is a messages.ParkedFile: the document's
// identity, which `sluice dlq show` prints.
func (p *Producer) unreadable(docID string, d corpus.Document, version int64, now time.Time, rejected error) messages.DeadLetter {
	class, code, detail := parkedAs(d, rejected)
	nativeID := messages.StorableNativeID(d.NativeID)
	pf := messages.ParkedFile{Schema: messages.ParkedFileSchema, SourceNativeID: nativeID, Path: messages.TruncateDetail(d.File),
		Bytes: d.Size, Format: string(d.Detected.Format), MIME: d.Detected.MIME, SHA256: d.SHA256, Status: string(d.Status)}
	payload, err := pf.Encode()
	if err != nil {
		// Only a path too long to keep gets here: the rest is ours.
		pf.Path = ""
		payload, _ = pf.Encode()
	}
	if !isToken(code) {
		code = ""
	}
	return messages.DeadLetter{
		Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(docID, 0),
		DocID: docID, ChunkIndex: 0, DocVersion: version, SourceID: p.cfg.SourceID, SourceNativeID: nativeID,
		RunID: p.cfg.RunID, Disposition: messages.DispositionQuarantine, ErrorClass: class, ErrorCode: code,
		ErrorDetail: messages.TruncateDetail(detail),
		Stage:       "produce", Attempts: 1, FailedAt: now, Payload: payload,
	}
}

// record writes the batch's documents and manifest rows, and the dead
// letters of unreadable documents, marks its unchanged documents read
// by the run, and records the recut generations' cuts of both, the
// run's file counts with the batch's files, and the source's ledger
// (Recorded), in one transaction: a run killed later counts exactly the
// files of the batches it recorded.
func (p *Producer) record(ctx context.Context, pl *plan, docs []corpus.Document) error {
	if len(pl.docs) == 0 && len(pl.unchanged) == 0 && p.Recorded == nil {
		return nil
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if err := manifest.MarkRead(ctx, tx, p.cfg.RunID, pl.unchanged); err != nil {
			return err
		}
		if len(pl.files) > 0 {
			if err := runs.RecordFiles(ctx, tx, p.cfg.RunID, p.Files.after(pl.files)); err != nil {
				return err
			}
		}
		if err := p.recordDocuments(ctx, tx, pl); err != nil {
			return err
		}
		if err := recordCuts(ctx, tx, pl); err != nil || p.Recorded == nil {
			return err
		}
		natives := make([]string, len(docs))
		for i, d := range docs {
			natives[i] = d.NativeID
		}
		return p.Recorded(ctx, tx, natives)
	})
}

// recordDocuments writes the batch's new versions of documents: their
// documents and manifest rows, what their older versions leave behind,
// their escalations and the dead letters of unreadable ones.
func (p *Producer) recordDocuments(ctx context.Context, tx pgx.Tx, pl *plan) error {
	if len(pl.docs) == 0 {
		return nil
	}
	n := len(pl.docs)
	d := manifest.Documents{DocIDs: make([]string, n), NativeIDs: make([]string, n), Hashes: make([]string, n),
		Statuses: make([]string, n), Codecs: make([]string, n), Metadata: make([]string, n),
		Versions: make([]int64, n), ChunkCounts: make([]int32, n)}
	for i, pd := range pl.docs {
		d.DocIDs[i], d.NativeIDs[i], d.Hashes[i], d.Statuses[i], d.Codecs[i] = pd.docID, pd.nativeID, pd.hash, string(pd.status), pd.codec
		d.Versions[i], d.ChunkCounts[i] = pd.version, int32(pd.chunkCount)
		d.Metadata[i] = "{}"
		if len(pd.metadata) > 0 {
			d.Metadata[i] = string(pd.metadata)
		}
	}
	if err := manifest.RecordDocuments(ctx, tx, p.cfg.SourceID, p.cfg.RunID, d); err != nil {
		return fmt.Errorf("record documents: %w", err)
	}
	deleted, err := manifest.Deleted(ctx, tx, d.DocIDs)
	if err != nil {
		return err
	}
	pl.leaveOut(deleted)
	if err := supersede(ctx, tx, pl); err != nil {
		return err
	}
	if err := p.recordManifest(ctx, tx, pl); err != nil {
		return err
	}
	if err := recordEscalations(ctx, tx, pl.escalated); err != nil {
		return err
	}
	if err := p.keepFiles(ctx, tx, pl); err != nil {
		return err
	}
	for _, dl := range pl.parked {
		if err := manifest.ParkUnreadable(ctx, tx, manifest.ParkedChunk{DocID: dl.DocID, Version: dl.DocVersion,
			Class: dl.ErrorClass, RunID: dl.RunID, Job: dl.Payload}); err != nil {
			return fmt.Errorf("park %s: %w", dl.SourceNativeID, err)
		}
	}
	return deadletter.Write(ctx, tx, pl.parked)
}

func (p *Producer) recordManifest(ctx context.Context, tx pgx.Tx, pl *plan) error {
	if len(pl.jobs) == 0 {
		return nil
	}
	n := len(pl.jobs)
	chunks, hashes, raws := manifest.MakeChunks(n), make([]string, n), make([][]byte, n)
	for i, j := range pl.jobs {
		chunks.Add(j.docID, j.index, j.version)
		hashes[i], raws[i] = j.hash, j.raw
	}
	if err := manifest.RecordPending(ctx, tx, p.cfg.RunID, chunks, hashes, raws); err != nil {
		return fmt.Errorf("record manifest: %w", err)
	}
	return nil
}

// supersede clears what older versions of the batch's documents leave
// behind. Manifest rows beyond a new, shorter chunk count will never be
// stored again: they become superseded. Every unresolved dead letter of
// an older version is resolved as superseded, so it is neither replayed
// nor counted as ready to replay; the new version gets dead letters of its
// own if it fails. A document whose new version is empty has nothing left
// to search: its old vectors go at once. One whose new version failed (a
// file that no longer extracts, a chunk parked before it was sent) keeps
// its old version searchable, as one with a new version to embed does
// until the new one is complete (see the pipeline's completion): a failed
// version never removes the served one. A first version has nothing
// older to clear, so a batch of new documents costs no statement here.
func supersede(ctx context.Context, tx pgx.Tx, pl *plan) error {
	var ids []string
	var versions []int64
	var counts []int32
	for _, d := range pl.docs {
		if d.version > 1 {
			ids, versions, counts = append(ids, d.docID), append(versions, d.version), append(counts, int32(d.chunkCount))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := manifest.SupersedeBeyond(ctx, tx, ids, versions, counts); err != nil {
		return fmt.Errorf("supersede old chunks: %w", err)
	}
	older := make([]int64, len(versions))
	for i, v := range versions {
		older[i] = v - 1
	}
	if _, err := deadletter.Resolve(ctx, tx, manifest.Chunks{DocIDs: ids, Versions: older}, manifest.Superseded); err != nil {
		return fmt.Errorf("resolve superseded dead letters: %w", err)
	}
	var gone []string
	for _, d := range pl.docs {
		if d.status == manifest.DocEmpty && d.version > 1 {
			gone = append(gone, d.docID)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if err := vectorstore.DeleteDocuments(ctx, tx, gone); err != nil {
		return fmt.Errorf("prune chunks of emptied documents: %w", err)
	}
	if err := manifest.ClearLiveVersions(ctx, tx, gone); err != nil {
		return fmt.Errorf("prune chunks of emptied documents: %w", err)
	}
	return nil
}

// recordEscalations parks escalated chunks: the manifest row holds the
// redacted job, the outbox its dead letter, and escalated_chunks the one
// copy of the real text.
func recordEscalations(ctx context.Context, tx pgx.Tx, es []escalation) error {
	dls := make([]messages.DeadLetter, len(es))
	kept := make([]manifest.Escalated, len(es))
	for i, e := range es {
		dls[i] = e.dl
		if err := manifest.ParkEscalated(ctx, tx, manifest.ParkedChunk{DocID: e.job.docID, Index: e.job.index,
			Version: e.job.version, Hash: e.job.hash, Class: classify.ClassPolicyViolation, RunID: e.dl.RunID, Job: e.job.raw}); err != nil {
			return fmt.Errorf("escalate chunk %d of %s: %w", e.job.index, e.dl.SourceNativeID, err)
		}
		kept[i] = manifest.Escalated{DocID: e.job.docID, Index: e.job.index, Version: e.job.version, Rule: e.rule, Text: e.text}
	}
	if err := manifest.KeepEscalatedText(ctx, tx, kept); err != nil {
		return err
	}
	return deadletter.Write(ctx, tx, dls)
}

// leaveOut drops from the plan everything of the documents deleted: a
// delete that committed between the plan and its record took the
// version the plan meant to record, so nothing of it may be written or
// published.
func (pl *plan) leaveOut(deleted map[string]bool) {
	if len(deleted) == 0 {
		return
	}
	pl.docs = slices.DeleteFunc(pl.docs, func(d plannedDoc) bool { return deleted[d.docID] })
	pl.jobs = slices.DeleteFunc(pl.jobs, func(j plannedJob) bool { return deleted[j.docID] })
	pl.parked = slices.DeleteFunc(pl.parked, func(dl messages.DeadLetter) bool { return deleted[dl.DocID] })
	pl.escalated = slices.DeleteFunc(pl.escalated, func(e escalation) bool { return deleted[e.job.docID] })
}

// isToken reports whether s can be a dead letter's error code: up to 64
// printable ASCII characters without spaces.
func isToken(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
