package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// previewBytes is how much of an undecodable payload --text shows.
const previewBytes = 200

// dlqDetail is the output of `sluice dlq show`: every column of one
// dead_letters row, with the payload interpreted.
type dlqDetail struct {
	DeadLetterID    string     `json:"dead_letter_id"`
	DocID           string     `json:"doc_id"`
	ChunkIndex      int        `json:"chunk_index"`
	Version         int64      `json:"version"`
	SourceID        string     `json:"source_id"`
	SourceNativeID  string     `json:"source_native_id"`
	RunID           *string    `json:"run_id"`
	Disposition     string     `json:"disposition"`
	ErrorClass      string     `json:"error_class"`
	ErrorCode       *string    `json:"error_code"`
	ErrorDetail     *string    `json:"error_detail"`
	Stage           string     `json:"stage"`
	Attempts        int        `json:"attempts"`
	ReplayGen       int        `json:"replay_gen"`
	LastOutboxID    int64      `json:"last_outbox_id"`
	FirstFailedAt   time.Time  `json:"first_failed_at"`
	LastFailedAt    time.Time  `json:"last_failed_at"`
	NextRetryAt     *time.Time `json:"next_retry_at"`
	ReplayedAt      *time.Time `json:"replayed_at"`
	ReplayID        *string    `json:"replay_id"`
	ResolvedAt      *time.Time `json:"resolved_at"`
	PayloadPurgedAt *time.Time `json:"payload_purged_at"`
	// State is the dead letter's deadletter.State.
	State deadletter.State `json:"state"`
	// Payload is null when the row holds none (purged, or never kept).
	Payload *payloadView `json:"payload"`
	// EscalatedText is an escalation's secret text, with --reveal-escalated
	// only: read through reveal_escalated_text, which records who asked and
	// why in escalated_text_audit.
	EscalatedText *string `json:"escalated_text,omitempty"`
}

// payloadView describes a payload without necessarily revealing it: chunk
// text can be sensitive, so text and raw previews appear only with --text.
type payloadView struct {
	Bytes int `json:"bytes"`
	// ChunkJob is set when the payload decodes as a messages.ChunkJob.
	ChunkJob *chunkJobView `json:"chunk_job,omitempty"`
	// ParkedFile is set when the payload is a document-level dead
	// letter's: the identity of a file parked whole, before chunking.
	ParkedFile *messages.ParkedFile `json:"parked_file,omitempty"`
	// KeptBytes is the size of a parked file's bytes kept for a replay;
	// nil when none are kept (never, or purged by retention).
	KeptBytes *int64 `json:"kept_bytes,omitempty"`
	// RecognisedBytes is the size of the text OCR recognised in a scan
	// parked below its bar, kept beside its bytes (print it with
	// --ocr-text); 0 when none is kept.
	RecognisedBytes int64 `json:"recognised_text_bytes,omitempty"`
	// DecodeError says why it does not, when it does not.
	DecodeError string `json:"decode_error,omitempty"`
	// Preview is the first previewBytes bytes of an undecodable payload,
	// with --text only: as UTF-8 when valid, else hex (PreviewEncoding).
	Preview         *string `json:"preview,omitempty"`
	PreviewEncoding string  `json:"preview_encoding,omitempty"`
	// PreviewBytes is how many payload bytes Preview shows.
	PreviewBytes int `json:"preview_bytes,omitempty"`
}

// chunkJobView is a ChunkJob's fields; Text only with --text.
type chunkJobView struct {
	Schema         int             `json:"schema"`
	DocID          string          `json:"doc_id"`
	ChunkIndex     int             `json:"chunk_index"`
	DocVersion     int64           `json:"doc_version"`
	ChunkCount     int             `json:"chunk_count"`
	SourceID       string          `json:"source_id"`
	SourceNativeID string          `json:"source_native_id"`
	RunID          string          `json:"run_id"`
	ContentHash    string          `json:"content_hash"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Codec          string          `json:"codec,omitempty"`
	PublishedAt    time.Time       `json:"published_at"`
	ReplayGen      int             `json:"replay_gen"`
	DeadLetterID   string          `json:"dead_letter_id,omitempty"`
	ReplayID       string          `json:"replay_id,omitempty"`
	TextBytes      int             `json:"text_bytes"`
	Text           *string         `json:"text,omitempty"`
}

// errDeadLetterNotFound is returned by readDeadLetter for an unknown id.
var errDeadLetterNotFound = errors.New("dead letter not found")

func runDLQShow(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "dlq show", &c, false)
	var withText, reveal, ocrText bool
	var reason string
	l.Bool(&withText, "text", "", false, "also print the chunk text (or a raw payload preview); it may be sensitive")
	l.Bool(&ocrText, "ocr-text", "", false, "print only the text OCR recognised in a scan parked below its bar, to edit and key in with sluice dlq correct --text")
	l.Bool(&reveal, "reveal-escalated", "", false, "also print an escalation's secret text (recorded in escalated_text_audit with --reason)")
	l.String(&reason, "reason", "", "", "why the escalated text is read (required with --reveal-escalated)")
	pos, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageErr("dlq show takes one DEAD_LETTER_ID (see sluice dlq ls), got %q", pos)
	}
	if reveal && strings.TrimSpace(reason) == "" {
		return usageErr("--reveal-escalated needs --reason \"...\": reading a secret is recorded with who asked and why")
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if ocrText {
		return printRecognised(ctx, env, pool, pos[0])
	}
	d, err := readDeadLetter(ctx, pool, pos[0], withText)
	if errors.Is(err, errDeadLetterNotFound) {
		return fmt.Errorf("dead letter %q not found: list ids with sluice dlq ls --all", pos[0])
	}
	if err != nil {
		return err
	}
	if reveal {
		if d.EscalatedText, err = revealEscalated(ctx, pool, d, cliPrincipal(env), reason); err != nil {
			return err
		}
	}
	if c.JSON {
		return printJSON(env.Stdout, d)
	}
	return printDLQDetail(env, d)
}

// revealEscalated reads the secret text kept for d's chunk, which only the
// operator role may, through the schema owner's reveal_escalated_text: it
// records principal and reason in escalated_text_audit before it answers.
func revealEscalated(ctx context.Context, pool *pgxpool.Pool, d *dlqDetail, principal, reason string) (*string, error) {
	if d.Disposition != messages.DispositionEscalate {
		return nil, fmt.Errorf("dead letter %s is not an escalation (%s): its text is in its payload, see --text", d.DeadLetterID, d.Disposition)
	}
	var text *string
	if err := pool.QueryRow(ctx, `SELECT reveal_escalated_text($1, $2, $3, $4, $5)`,
		d.DocID, d.ChunkIndex, d.Version, principal, reason).Scan(&text); err != nil {
		return nil, fmt.Errorf("reveal escalated text of %s: %w", d.DeadLetterID, err)
	}
	if text == nil {
		return nil, fmt.Errorf("no escalated text is kept for %s (version %d): retention removed it, or it was never kept", d.DeadLetterID, d.Version)
	}
	return text, nil
}

func readDeadLetter(ctx context.Context, pool *pgxpool.Pool, id string, withText bool) (*dlqDetail, error) {
	l, err := deadletter.Get(ctx, pool, id)
	if errors.Is(err, deadletter.ErrNotFound) {
		return nil, errDeadLetterNotFound
	}
	if err != nil {
		return nil, err
	}
	d := &dlqDetail{
		DeadLetterID: l.ID, DocID: l.DocID, ChunkIndex: l.ChunkIndex, Version: l.Version, SourceID: l.Source,
		SourceNativeID: l.NativeID, RunID: l.RunID, Disposition: l.Disposition, ErrorClass: l.ErrorClass,
		ErrorCode: l.ErrorCode, ErrorDetail: l.ErrorDetail, Stage: l.Stage, Attempts: l.Attempts, ReplayGen: l.ReplayGen,
		LastOutboxID: l.LastOutboxID, FirstFailedAt: l.FirstFailedAt, LastFailedAt: l.LastFailedAt,
		NextRetryAt: l.NextRetryAt, ReplayedAt: l.ReplayedAt, ReplayID: l.ReplayID, ResolvedAt: l.ResolvedAt,
		PayloadPurgedAt: l.PayloadPurgedAt, State: l.State,
	}
	if l.RawPayload != nil {
		d.Payload = viewPayload(l.RawPayload, withText)
	}
	if d.Payload != nil && d.Payload.ParkedFile != nil {
		k, ok, err := deadletter.KeptFileOf(ctx, pool, id)
		if err != nil {
			return nil, err
		}
		if ok {
			d.Payload.KeptBytes, d.Payload.RecognisedBytes = &k.Size, k.RecognisedBytes
		}
	}
	return d, nil
}

// viewPayload interprets a payload: a chunk job's fields, or its size and,
// with withText, a preview.
func viewPayload(payload []byte, withText bool) *payloadView {
	v := &payloadView{Bytes: len(payload)}
	job, err := messages.DecodeChunkJob(payload)
	if pf, perr := messages.DecodeParkedFile(payload); err != nil && perr == nil {
		v.ParkedFile = &pf
		return v
	}
	if err != nil {
		v.DecodeError = err.Error()
		if withText {
			v.Preview, v.PreviewEncoding, v.PreviewBytes = preview(payload, previewBytes)
		}
		return v
	}
	v.ChunkJob = &chunkJobView{
		Schema: job.Schema, DocID: job.DocID, ChunkIndex: job.ChunkIndex, DocVersion: job.DocVersion,
		ChunkCount: job.ChunkCount, SourceID: job.SourceID, SourceNativeID: job.SourceNativeID, RunID: job.RunID,
		ContentHash: job.ContentHash, Metadata: job.Metadata, Codec: job.Codec, PublishedAt: job.PublishedAt,
		ReplayGen: job.ReplayGen, DeadLetterID: job.DeadLetterID, ReplayID: job.ReplayID, TextBytes: len(job.Text),
	}
	if withText {
		v.ChunkJob.Text = &job.Text
	}
	return v
}

// preview returns up to n bytes of b as UTF-8 when they are valid text (a
// rune cut at the limit is dropped), else as hex, and how many bytes it
// shows.
func preview(b []byte, n int) (*string, string, int) {
	if len(b) > n {
		b = b[:n]
		// Drop a rune the cut split, so that valid text stays valid.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, "utf-8", len(b)
	}
	s := hex.EncodeToString(b)
	return &s, "hex", len(b)
}

func printDLQDetail(env Env, d *dlqDetail) error {
	tw := newTable(env.Stdout)
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return cell(*p)
	}
	rows := [][2]string{
		{"dead_letter_id", d.DeadLetterID}, {"doc_id", d.DocID}, {"chunk_index", strconv.Itoa(d.ChunkIndex)},
		{"version", strconv.FormatInt(d.Version, 10)}, {"source_id", cell(d.SourceID)},
		{"source_native_id", cell(d.SourceNativeID)}, {"run_id", str(d.RunID)},
		{"disposition", d.Disposition}, {"error_class", cell(d.ErrorClass)}, {"error_code", str(d.ErrorCode)},
		{"error_detail", str(d.ErrorDetail)}, {"stage", cell(d.Stage)}, {"attempts", strconv.Itoa(d.Attempts)},
		{"replay_gen", strconv.Itoa(d.ReplayGen)}, {"last_outbox_id", strconv.FormatInt(d.LastOutboxID, 10)},
		{"first_failed_at", tableTime(d.FirstFailedAt)}, {"last_failed_at", tableTime(d.LastFailedAt)},
		{"next_retry_at", tableTimePtr(d.NextRetryAt)}, {"replayed_at", tableTimePtr(d.ReplayedAt)},
		{"replay_id", str(d.ReplayID)}, {"resolved_at", tableTimePtr(d.ResolvedAt)},
		{"payload_purged_at", tableTimePtr(d.PayloadPurgedAt)}, {"state", strings.ReplaceAll(string(d.State), "_", " ")},
	}
	rows = append(rows, payloadRows(d.Payload)...)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.EscalatedText != nil {
		if _, err := fmt.Fprintf(env.Stdout, "\n--- escalated text (read recorded in escalated_text_audit) ---\n%s\n", printable(*d.EscalatedText)); err != nil {
			return err
		}
	}
	if d.Payload != nil && d.Payload.ParkedFile != nil {
		printParkedCommands(env.Stdout, d)
	}
	return printPayloadText(env, d.Payload)
}

// keptCell says whether a parked file's bytes are kept, how many, or why
// not.
func keptCell(p *payloadView) string {
	f := p.ParkedFile
	switch {
	case p.KeptBytes != nil:
		return fmt.Sprintf("%s, %d bytes", messages.KeptFile, *p.KeptBytes)
	case f.Kept == messages.NotKeptFile:
		return cell(messages.NotKeptFile + ": " + f.NotKeptReason)
	case f.Kept == messages.KeptFile:
		return messages.NotKeptFile + ": purged by retention"
	}
	return messages.NotKeptFile + ": parked before bytes were kept"
}

// printParkedCommands says how to replay a parked file or key its text
// in.
func printParkedCommands(w io.Writer, d *dlqDetail) {
	if d.ResolvedAt != nil {
		return
	}
	fmt.Fprintln(w)
	switch {
	case d.Payload.KeptBytes != nil && d.ErrorClass == classify.ClassOCRLowConfidence:
		fmt.Fprintf(w, "store its OCR text as it is, below the bar:\n  sluice dlq replay --id %s --accept-ocr --execute --reason \"...\"\n", d.DeadLetterID)
		fmt.Fprintf(w, "or lower the source's ocr_min_confidence (or fix its ocr_languages) in the policy file and read it again:\n  sluice dlq replay --id %s --policy-file FILE --execute --reason \"...\"\n", d.DeadLetterID)
	case d.Payload.KeptBytes != nil:
		fmt.Fprintf(w, "replay it from its kept bytes once the cause is fixed (add --password for an encrypted PDF, or a raised --extract-* or --max-document-bytes limit):\n  sluice dlq replay --id %s --execute --reason \"...\"\n", d.DeadLetterID)
	}
	if d.Payload.RecognisedBytes > 0 {
		fmt.Fprintf(w, "or key its text in by hand, starting from what OCR recognised:\n  sluice dlq show %s --ocr-text > FILE\n", d.DeadLetterID)
		fmt.Fprintf(w, "  (edit FILE against the page: the console shows it to operators)\n  sluice dlq correct --id %s --text FILE --execute --reason \"...\"\n", d.DeadLetterID)
		return
	}
	fmt.Fprintf(w, "or key its text in by hand:\n  sluice dlq correct --id %s --text FILE --execute --reason \"...\"\n", d.DeadLetterID)
}

// printRecognised prints the text OCR recognised in dead letter id's
// scan, and nothing else, so that it can be saved, edited and keyed in.
func printRecognised(ctx context.Context, env Env, pool *pgxpool.Pool, id string) error {
	text, err := deadletter.ReadRecognised(ctx, pool, id)
	if errors.Is(err, deadletter.ErrNoRecognisedText) {
		return fmt.Errorf("dead letter %q keeps no recognised text: only a scan parked as %s with its bytes kept does (see sluice dlq show %s)",
			id, classify.ClassOCRLowConfidence, id)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(env.Stdout, text)
	return err
}

// payloadRows describes the payload for the key/value table.
func payloadRows(p *payloadView) [][2]string {
	if p == nil {
		return [][2]string{{"payload", "none"}}
	}
	if f := p.ParkedFile; f != nil {
		rows := [][2]string{
			{"payload", fmt.Sprintf("parked file, %d bytes: the file was parked whole, before chunking", p.Bytes)},
			{"file.path", cell(f.Path)}, {"file.bytes", strconv.FormatInt(f.Bytes, 10)},
			{"file.format", cell(f.Format)}, {"file.mime", cell(f.MIME)}, {"file.sha256", cell(f.SHA256)},
			{"file.status", cell(f.Status)}, {"file.kept", keptCell(p)},
		}
		if p.RecognisedBytes > 0 {
			rows = append(rows, [2]string{"file.recognised_text", fmt.Sprintf("%d bytes kept (--ocr-text prints it)", p.RecognisedBytes)})
		}
		return rows
	}
	if p.ChunkJob == nil {
		return [][2]string{
			{"payload", fmt.Sprintf("%d bytes, not a chunk job", p.Bytes)},
			{"payload.decode_error", cell(p.DecodeError)},
		}
	}
	j := p.ChunkJob
	meta := "-"
	if j.Metadata != nil {
		meta = cell(string(j.Metadata))
	}
	return [][2]string{
		{"payload", fmt.Sprintf("chunk job, %d bytes", p.Bytes)},
		{"job.doc_version", strconv.FormatInt(j.DocVersion, 10)},
		{"job.chunk_count", strconv.Itoa(j.ChunkCount)},
		{"job.run_id", cell(j.RunID)},
		{"job.content_hash", j.ContentHash},
		{"job.codec", cell(j.Codec)},
		{"job.published_at", tableTime(j.PublishedAt)},
		{"job.replay_gen", strconv.Itoa(j.ReplayGen)},
		{"job.dead_letter_id", cell(j.DeadLetterID)},
		{"job.replay_id", cell(j.ReplayID)},
		{"job.metadata", meta},
		{"job.text_bytes", strconv.Itoa(j.TextBytes)},
	}
}

// printPayloadText prints the chunk text or raw preview after the table,
// where a multi-line text does not break the alignment, or says how to
// see it.
func printPayloadText(env Env, p *payloadView) error {
	switch {
	case p == nil, p.ParkedFile != nil:
		return nil
	case p.ChunkJob != nil && p.ChunkJob.Text != nil:
		_, err := fmt.Fprintf(env.Stdout, "\n--- text ---\n%s\n", printable(*p.ChunkJob.Text))
		return err
	case p.Preview != nil:
		body := printable(*p.Preview)
		if raw, err := hex.DecodeString(*p.Preview); err == nil && p.PreviewEncoding == "hex" {
			body = hex.Dump(raw) // offsets and an ASCII column read better than one hex line
		}
		_, err := fmt.Fprintf(env.Stdout, "\n--- first %d of %d bytes (%s) ---\n%s\n", p.PreviewBytes, p.Bytes, p.PreviewEncoding, body)
		return err
	}
	fmt.Fprintln(env.Stderr, "payload content hidden (it may be sensitive): add --text to print it")
	return nil
}
