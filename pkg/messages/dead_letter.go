package messages

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// DeadLetterSchema is the only DeadLetter version this build reads and
// writes.
const DeadLetterSchema = 1

// Dispositions, as they appear in DeadLetter.Disposition and DLQSubject.
// They mirror pkg/classify's, spelled out here because this package imports
// nothing of the project's.
const (
	// DispositionRetry: transient, re-driven by the replayer after
	// NextRetryAt.
	DispositionRetry = "retry"
	// DispositionQuarantine: permanent, parked for a human.
	DispositionQuarantine = "quarantine"
	// DispositionAmbiguous: unrecognised, parked after its bounded retries.
	DispositionAmbiguous = "ambiguous"
	// DispositionEscalate: a policy matched; alert, never replay on its own.
	DispositionEscalate = "escalate"
)

func isDisposition(s string) bool {
	switch s {
	case DispositionRetry, DispositionQuarantine, DispositionAmbiguous, DispositionEscalate:
		return true
	}
	return false
}

// MaxErrorDetailChars caps DeadLetter.ErrorDetail, in characters (runes).
const MaxErrorDetailChars = 2000

// DeadLetter records one failure of one chunk: enough for a human to triage
// it and for the replayer to re-drive it from Payload alone. It is written
// to the outbox in the transaction that parks the chunk, and published by
// the relay on DLQSubject(Disposition, SourceID) with Nats-Msg-Id
// DeadLetterMsgID(outbox id).
//
// Like ChunkJob it implements json.Marshaler and json.Unmarshaler with the
// rules of Encode and DecodeDeadLetter.
type DeadLetter struct {
	// Schema must be DeadLetterSchema.
	Schema int
	// DeadLetterID identifies the chunk's dead letter, normally
	// DeadLetterID(DocID, ChunkIndex): 1–128 characters of A-Z a-z 0-9 . _ -.
	DeadLetterID string
	// DocID is the failed chunk's document, same format as DeadLetterID.
	// When the job itself could not be decoded, take it from the job's
	// Nats-Msg-Id with ParseChunkMsgID.
	DocID string
	// ChunkIndex is the failed chunk's index, 0 to 2³¹−1.
	ChunkIndex int
	// DocVersion is the document version that failed, or 0 when the job
	// could not be decoded and its version is unknown.
	DocVersion int64
	// SourceID names the corpus; see ValidateSourceID and SourceFromSubject.
	SourceID string
	// SourceNativeID is the document's id in its source; empty when the job
	// could not be decoded.
	SourceNativeID string
	// RunID is the run that published the job; empty when unknown.
	RunID string
	// Disposition is one of the Disposition* constants.
	Disposition string
	// ErrorClass is the classifier's stable error class, such as
	// "rate_limited": 1–64 printable ASCII characters without spaces.
	ErrorClass string
	// ErrorCode narrows ErrorClass down ("http_503"); optional, same format.
	ErrorCode string
	// ErrorDetail is the error text for humans: valid UTF-8 without NUL, at
	// most MaxErrorDetailChars characters. Pass it through TruncateDetail.
	ErrorDetail string
	// Stage is where the chunk failed: "decode", "policy", "embed",
	// "store", "replay", …; 1–64 printable ASCII characters without spaces.
	Stage string
	// Attempts is how many times the chunk was tried in this generation,
	// at least 1.
	Attempts int
	// ReplayGen is the replay generation that failed, 0 for first delivery.
	ReplayGen int
	// FailedAt is when this failure happened. Encoded in UTC.
	FailedAt time.Time
	// NextRetryAt is when the replayer may try again; nil when it should not
	// retry on its own.
	NextRetryAt *time.Time
	// Payload is the original job message exactly as received, at most
	// MaxMessageBytes. It is carried as base64 so that even a message that
	// is not valid UTF-8, or not JSON at all, is kept byte for byte.
	Payload []byte
}

type deadLetterWire struct {
	Schema         int    `json:"schema"`
	DeadLetterID   string `json:"dead_letter_id"`
	DocID          string `json:"doc_id"`
	ChunkIndex     int    `json:"chunk_index"`
	DocVersion     int64  `json:"doc_version"`
	SourceID       string `json:"source_id"`
	SourceNativeID string `json:"source_native_id"`
	RunID          string `json:"run_id"`
	Disposition    string `json:"disposition"`
	ErrorClass     string `json:"error_class"`
	ErrorCode      string `json:"error_code,omitempty"`
	ErrorDetail    string `json:"error_detail"`
	Stage          string `json:"stage"`
	Attempts       int    `json:"attempts"`
	ReplayGen      int    `json:"replay_gen"`
	FailedAt       string `json:"failed_at"`
	NextRetryAt    string `json:"next_retry_at,omitempty"`
	Payload        string `json:"payload"`
}

var (
	_ json.Marshaler   = DeadLetter{}
	_ json.Unmarshaler = (*DeadLetter)(nil)
)

// TruncateDetail makes s fit DeadLetter.ErrorDetail: invalid UTF-8 and NUL
// become U+FFFD (Postgres text and jsonb cannot hold either), and text over
// MaxErrorDetailChars characters is cut on a character boundary, its last
// kept character replaced by "…" to show the cut.
func TruncateDetail(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxErrorDetailChars {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxErrorDetailChars-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Validate reports the first rule d breaks as a *DecodeError, or nil. It
// applies exactly the rules DecodeDeadLetter applies.
func (d *DeadLetter) Validate() error {
	checks := []func() error{
		func() error { return checkSchemaValue(d.Schema, DeadLetterSchema, "DeadLetterSchema") },
		func() error { return checkID("dead_letter_id", d.DeadLetterID, true) },
		func() error { return checkID("doc_id", d.DocID, true) },
		func() error { return checkRange("chunk_index", int64(d.ChunkIndex), 0, maxInt32) },
		func() error { return checkMin("doc_version", d.DocVersion, 0) },
		func() error { return ValidateSourceID(d.SourceID) },
		func() error { return checkNativeID(d.SourceNativeID, false) },
		func() error { return checkToken("run_id", d.RunID, maxIDLen, false) },
		d.checkDisposition,
		func() error { return checkToken("error_class", d.ErrorClass, maxTokenLen, true) },
		func() error { return checkToken("error_code", d.ErrorCode, maxTokenLen, false) },
		d.checkDetail,
		func() error { return checkToken("stage", d.Stage, maxTokenLen, true) },
		func() error { return checkRange("attempts", int64(d.Attempts), 1, maxInt32) },
		func() error { return checkRange("replay_gen", int64(d.ReplayGen), 0, maxInt32) },
		func() error { return checkTime("failed_at", d.FailedAt, true) },
		func() error {
			if d.NextRetryAt == nil {
				return nil
			}
			if d.NextRetryAt.IsZero() {
				return invalid("next_retry_at", "is the zero time; leave it nil for no retry")
			}
			return checkTime("next_retry_at", *d.NextRetryAt, true)
		},
		func() error {
			if len(d.Payload) > MaxMessageBytes {
				return &DecodeError{
					Field:  "payload",
					Reason: fmt.Sprintf("is %d bytes, over the %d-byte message limit", len(d.Payload), MaxMessageBytes),
					Err:    ErrOversize,
				}
			}
			return nil
		},
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func (d *DeadLetter) checkDisposition() error {
	if d.Disposition == "" {
		return missing("disposition")
	}
	if !isDisposition(d.Disposition) {
		return invalid("disposition", fmt.Sprintf("%q is not one of retry, quarantine, ambiguous, escalate", displayKey(d.Disposition)))
	}
	return nil
}

func (d *DeadLetter) checkDetail() error {
	if err := checkString("error_detail", d.ErrorDetail, 4*MaxErrorDetailChars); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(d.ErrorDetail); n > MaxErrorDetailChars {
		return invalid("error_detail", fmt.Sprintf("is %d characters; the limit is %d (use TruncateDetail)", n, MaxErrorDetailChars))
	}
	return nil
}

// Encode validates d and returns its canonical encoding: compact JSON with
// fields in the documented order, error_code and next_retry_at omitted when
// empty, times in UTC, Payload in standard padded base64, no HTML escaping
// and no trailing newline. It fails with an error matching ErrInvalid when d
// is invalid, and also ErrOversize when the result would exceed
// MaxDeadLetterBytes.
func (d *DeadLetter) Encode() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	w := deadLetterWire{
		Schema:         d.Schema,
		DeadLetterID:   d.DeadLetterID,
		DocID:          d.DocID,
		ChunkIndex:     d.ChunkIndex,
		DocVersion:     d.DocVersion,
		SourceID:       d.SourceID,
		SourceNativeID: d.SourceNativeID,
		RunID:          d.RunID,
		Disposition:    d.Disposition,
		ErrorClass:     d.ErrorClass,
		ErrorCode:      d.ErrorCode,
		ErrorDetail:    d.ErrorDetail,
		Stage:          d.Stage,
		Attempts:       d.Attempts,
		ReplayGen:      d.ReplayGen,
		FailedAt:       formatTime(d.FailedAt),
		Payload:        base64.StdEncoding.EncodeToString(d.Payload),
	}
	if d.NextRetryAt != nil {
		w.NextRetryAt = formatTime(*d.NextRetryAt)
	}
	out, err := marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode dead letter: %w", err)
	}
	if err := checkSize(out, MaxDeadLetterBytes); err != nil {
		return nil, err
	}
	return out, nil
}

// MarshalJSON returns Encode's canonical bytes.
func (d DeadLetter) MarshalJSON() ([]byte, error) { return d.Encode() }

// UnmarshalJSON decodes with DecodeDeadLetter's rules. A JSON null leaves d
// unchanged, as encoding/json expects of an Unmarshaler.
func (d *DeadLetter) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := DecodeDeadLetter(data)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// deadLetterIn is a dead letter as read off the wire: nil where a member is
// absent or null.
type deadLetterIn struct {
	Schema, ChunkIndex, Attempts, ReplayGen *int
	DocVersion                              *int64
	DeadLetterID, DocID, SourceID           *string
	SourceNativeID, RunID, Disposition      *string
	ErrorClass, ErrorCode, ErrorDetail      *string
	Stage, Payload                          *string
	FailedAt, NextRetryAt                   *time.Time
}

// fields lists the members of a dead letter, in the order their absence is
// reported.
func (in *deadLetterIn) fields() []field {
	return []field{
		{"schema", &in.Schema, wantInt, false},
		{"dead_letter_id", &in.DeadLetterID, wantString, true},
		{"doc_id", &in.DocID, wantString, true},
		{"chunk_index", &in.ChunkIndex, wantInt, true},
		{"doc_version", &in.DocVersion, wantInt, true},
		{"source_id", &in.SourceID, wantString, true},
		{"source_native_id", &in.SourceNativeID, wantString, true},
		{"run_id", &in.RunID, wantString, true},
		{"disposition", &in.Disposition, wantString, true},
		{"error_class", &in.ErrorClass, wantString, true},
		{"error_code", &in.ErrorCode, wantString, false},
		{"error_detail", &in.ErrorDetail, wantString, true},
		{"stage", &in.Stage, wantString, true},
		{"attempts", &in.Attempts, wantInt, true},
		{"replay_gen", &in.ReplayGen, wantInt, true},
		{"failed_at", &in.FailedAt, wantTimestamp, true},
		{"next_retry_at", &in.NextRetryAt, wantTimestamp, false},
		{"payload", &in.Payload, "a base64 string", true},
	}
}

// DecodeDeadLetter strictly decodes an encoded DeadLetter, with the same
// rules and errors as DecodeChunkJob except that the limit is
// MaxDeadLetterBytes and the schema DeadLetterSchema. Every field Encode
// always writes is required; error_code and next_retry_at are optional.
// Payload must be standard padded base64 without line breaks; an empty
// payload decodes to nil. Times are returned in UTC.
func DecodeDeadLetter(data []byte) (DeadLetter, error) {
	var in deadLetterIn
	if err := readObject(data, MaxDeadLetterBytes, DeadLetterSchema, in.fields()); err != nil {
		return DeadLetter{}, err
	}
	payload, err := decodePayload(*in.Payload)
	if err != nil {
		return DeadLetter{}, err
	}
	d := DeadLetter{
		Schema:         *in.Schema,
		DeadLetterID:   *in.DeadLetterID,
		DocID:          *in.DocID,
		ChunkIndex:     *in.ChunkIndex,
		DocVersion:     *in.DocVersion,
		SourceID:       *in.SourceID,
		SourceNativeID: *in.SourceNativeID,
		RunID:          *in.RunID,
		Disposition:    *in.Disposition,
		ErrorClass:     *in.ErrorClass,
		ErrorCode:      deref(in.ErrorCode),
		ErrorDetail:    *in.ErrorDetail,
		Stage:          *in.Stage,
		Attempts:       *in.Attempts,
		ReplayGen:      *in.ReplayGen,
		FailedAt:       in.FailedAt.UTC(),
		Payload:        payload,
	}
	if in.NextRetryAt != nil {
		t := in.NextRetryAt.UTC()
		d.NextRetryAt = &t
	}
	if err := d.Validate(); err != nil {
		return DeadLetter{}, err
	}
	return d, nil
}

// decodePayload is stricter than encoding/json's []byte decoding, which
// skips line breaks and ignores stray padding bits, so that one payload has
// one encoding.
func decodePayload(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, invalid("payload", "base64 must not contain line breaks")
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, &DecodeError{Field: "payload", Reason: "must be standard padded base64", Err: err}
	}
	if len(b) == 0 {
		return nil, nil
	}
	return b, nil
}
