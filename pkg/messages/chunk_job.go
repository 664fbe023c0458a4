package messages

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// ChunkJobSchema is the only ChunkJob version this build reads and writes.
const ChunkJobSchema = 1

// ChunkJob is one chunk of one document version, to be embedded and stored.
// It travels on ChunkSubject(SourceID), or ReplaySubject(SourceID) when a
// dead letter is replayed, with Nats-Msg-Id ChunkMsgID or ReplayMsgID.
//
// Encode and DecodeChunkJob are the only ways to put it on or take it off the
// wire. ChunkJob also implements json.Marshaler and json.Unmarshaler with the
// same rules, so embedding it in another JSON document cannot bypass them.
type ChunkJob struct {
	// Schema must be ChunkJobSchema.
	Schema int
	// DocID is the document's stable id, normally DocID(SourceID,
	// SourceNativeID): 1–128 characters of A-Z a-z 0-9 . _ -.
	DocID string
	// ChunkIndex is the chunk's position in the document, 0 ≤ ChunkIndex <
	// ChunkCount.
	ChunkIndex int
	// DocVersion is the document version this chunk belongs to, ≥ 1. The
	// store never lets an older version overwrite a newer one.
	DocVersion int64
	// ChunkCount is how many chunks this version of the document has, from
	// 1 to 2³¹−1; the document is ready when all of them are stored.
	ChunkCount int
	// SourceID names the corpus; see ValidateSourceID.
	SourceID string
	// SourceNativeID is the document's id in its source system (a path, a
	// URL, a key): non-empty UTF-8 without NUL, at most 4,096 bytes.
	SourceNativeID string
	// RunID is the ingest run that published the job: 1–128 printable
	// ASCII characters without spaces.
	RunID string
	// ContentHash must equal ContentHash(Text, Metadata).
	ContentHash string
	// Text is the chunk to embed, valid UTF-8. It may be empty here; whether
	// empty text is acceptable is the pipeline's policy, not the envelope's.
	Text string
	// Metadata is a JSON object stored beside the vector, or nil. After
	// DecodeChunkJob it is in canonical form (see CanonicalJSON), and nil
	// when it was absent, null or {}.
	Metadata json.RawMessage
	// Codec names the character encoding the producer decoded the source
	// with ("utf-8", "windows-1252"), for triage of encoding drift. Text is
	// UTF-8 whatever it says. Optional: at most 64 printable ASCII
	// characters.
	Codec string
	// PublishedAt is when the job was published. It is written in UTC with
	// nanoseconds and decoded in UTC.
	PublishedAt time.Time
	// ReplayGen counts how many times this chunk has been replayed from the
	// DLQ; 0 for first delivery.
	ReplayGen int
	// DeadLetterID is set on replays: the dead letter being replayed. It is
	// required when ReplayGen > 0 or ReplayID is set.
	DeadLetterID string
	// ReplayID is set on replays: the replay_audit row that dispatched it.
	ReplayID string
}

// chunkJobWire fixes the order and spelling of the encoded fields.
type chunkJobWire struct {
	Schema         int             `json:"schema"`
	DocID          string          `json:"doc_id"`
	ChunkIndex     int             `json:"chunk_index"`
	DocVersion     int64           `json:"doc_version"`
	ChunkCount     int             `json:"chunk_count"`
	SourceID       string          `json:"source_id"`
	SourceNativeID string          `json:"source_native_id"`
	RunID          string          `json:"run_id"`
	ContentHash    string          `json:"content_hash"`
	Text           string          `json:"text"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Codec          string          `json:"codec,omitempty"`
	PublishedAt    string          `json:"published_at"`
	ReplayGen      int             `json:"replay_gen,omitempty"`
	DeadLetterID   string          `json:"dead_letter_id,omitempty"`
	ReplayID       string          `json:"replay_id,omitempty"`
}

var (
	_ json.Marshaler   = ChunkJob{}
	_ json.Unmarshaler = (*ChunkJob)(nil)
)

// Validate reports the first rule j breaks as a *DecodeError, or nil. It
// applies exactly the rules DecodeChunkJob applies, so a job that validates
// encodes, and its encoding decodes.
func (j *ChunkJob) Validate() error {
	_, err := j.check()
	return err
}

// Encode validates j and returns its canonical encoding: compact JSON with
// fields in the documented order, optional fields omitted when empty,
// metadata canonicalised (and omitted when it is {}), no HTML escaping, and
// no trailing newline. Equal jobs encode to identical bytes. It fails with
// an error matching ErrInvalid when j is invalid, and also ErrOversize when
// the result would exceed MaxMessageBytes.
func (j *ChunkJob) Encode() ([]byte, error) {
	meta, err := j.check()
	if err != nil {
		return nil, err
	}
	return j.encode(meta)
}

// EncodeCanonical sets j.ContentHash from j.Text and j.Metadata, then
// returns Encode's bytes, canonicalising nothing and hashing the text
// once: Encode would canonicalise the metadata and hash the text again
// to check the hash ContentHash had just computed. j.Metadata must be
// canonical already (CanonicalJSON's result, or nil), as a document's
// metadata is once it is admitted; metadata that is not would give a
// hash DecodeChunkJob refuses. It fails as Encode does.
func (j *ChunkJob) EncodeCanonical() ([]byte, error) {
	if err := j.checkFields(); err != nil {
		return nil, err
	}
	if !utf8.ValidString(j.Text) {
		return nil, &DecodeError{Field: "text", Reason: "is not valid UTF-8", Err: ErrInvalidUTF8}
	}
	meta := j.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	j.ContentHash = contentHash(j.Text, meta)
	return j.encode(meta)
}

// encode marshals j with its canonical metadata meta.
func (j *ChunkJob) encode(meta json.RawMessage) ([]byte, error) {
	if string(meta) == "{}" {
		meta = nil
	}
	out, err := marshal(chunkJobWire{
		Schema:         j.Schema,
		DocID:          j.DocID,
		ChunkIndex:     j.ChunkIndex,
		DocVersion:     j.DocVersion,
		ChunkCount:     j.ChunkCount,
		SourceID:       j.SourceID,
		SourceNativeID: j.SourceNativeID,
		RunID:          j.RunID,
		ContentHash:    j.ContentHash,
		Text:           j.Text,
		Metadata:       meta,
		Codec:          j.Codec,
		PublishedAt:    formatTime(j.PublishedAt),
		ReplayGen:      j.ReplayGen,
		DeadLetterID:   j.DeadLetterID,
		ReplayID:       j.ReplayID,
	})
	if err != nil {
		return nil, fmt.Errorf("encode chunk job: %w", err)
	}
	if err := checkSize(out, MaxMessageBytes); err != nil {
		return nil, err
	}
	return out, nil
}

// MarshalJSON returns Encode's canonical bytes.
func (j ChunkJob) MarshalJSON() ([]byte, error) { return j.Encode() }

// UnmarshalJSON decodes with DecodeChunkJob's rules. A JSON null leaves j
// unchanged, as encoding/json expects of an Unmarshaler.
func (j *ChunkJob) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := DecodeChunkJob(data)
	if err != nil {
		return err
	}
	*j = v
	return nil
}

// chunkJobIn is a chunk job as read off the wire: nil where a member is
// absent or null.
type chunkJobIn struct {
	Schema, ChunkIndex, ChunkCount, ReplayGen *int
	DocVersion                                *int64
	DocID, SourceID, SourceNativeID, RunID    *string
	ContentHash, Text, Codec                  *string
	DeadLetterID, ReplayID                    *string
	Metadata                                  json.RawMessage
	PublishedAt                               *time.Time
}

// fields lists the members of a chunk job, in the order their absence is
// reported.
func (in *chunkJobIn) fields() []field {
	return []field{
		{"schema", &in.Schema, wantInt, false},
		{"doc_id", &in.DocID, wantString, true},
		{"chunk_index", &in.ChunkIndex, wantInt, true},
		{"doc_version", &in.DocVersion, wantInt, true},
		{"chunk_count", &in.ChunkCount, wantInt, true},
		{"source_id", &in.SourceID, wantString, true},
		{"source_native_id", &in.SourceNativeID, wantString, true},
		{"run_id", &in.RunID, wantString, true},
		{"content_hash", &in.ContentHash, wantString, true},
		{"text", &in.Text, wantString, true},
		{"metadata", &in.Metadata, "a JSON object or null", false},
		{"codec", &in.Codec, wantString, false},
		{"published_at", &in.PublishedAt, wantTimestamp, true},
		{"replay_gen", &in.ReplayGen, wantInt, false},
		{"dead_letter_id", &in.DeadLetterID, wantString, false},
		{"replay_id", &in.ReplayID, wantString, false},
	}
}

// DecodeChunkJob strictly decodes an encoded ChunkJob. It rejects, with a
// *DecodeError that matches ErrInvalid, input that:
//
//   - is over MaxMessageBytes (also ErrOversize), checked before parsing;
//   - holds invalid UTF-8 anywhere, or a \u escape of a lone surrogate
//     (also ErrInvalidUTF8);
//   - is not exactly one JSON object, or has data after it;
//   - has a schema other than ChunkJobSchema (also ErrUnknownSchema);
//   - has a field twice, or a field the schema does not define (names match
//     exactly, not case-insensitively as encoding/json would);
//   - lacks a required field or has it null (also ErrMissingField);
//   - has a value of the wrong type or out of range, metadata that is not
//     an object, or a content_hash that does not match text and metadata.
//
// Fields may come in any order with any whitespace, so an envelope that
// went through Postgres jsonb still decodes. The result is normalised:
// Metadata canonical (nil when empty), PublishedAt in UTC.
func DecodeChunkJob(data []byte) (ChunkJob, error) {
	var in chunkJobIn
	if err := readObject(data, MaxMessageBytes, ChunkJobSchema, in.fields()); err != nil {
		return ChunkJob{}, err
	}
	j := ChunkJob{
		Schema:         *in.Schema,
		DocID:          *in.DocID,
		ChunkIndex:     *in.ChunkIndex,
		DocVersion:     *in.DocVersion,
		ChunkCount:     *in.ChunkCount,
		SourceID:       *in.SourceID,
		SourceNativeID: *in.SourceNativeID,
		RunID:          *in.RunID,
		ContentHash:    *in.ContentHash,
		Text:           *in.Text,
		Metadata:       in.Metadata,
		Codec:          deref(in.Codec),
		PublishedAt:    in.PublishedAt.UTC(),
		ReplayGen:      deref(in.ReplayGen),
		DeadLetterID:   deref(in.DeadLetterID),
		ReplayID:       deref(in.ReplayID),
	}
	meta, err := j.check()
	if err != nil {
		return ChunkJob{}, err
	}
	j.Metadata = meta
	if string(meta) == "{}" {
		j.Metadata = nil
	}
	return j, nil
}

// check validates j and returns its canonical metadata, so that Encode and
// DecodeChunkJob canonicalise only once.
func (j *ChunkJob) check() (json.RawMessage, error) {
	if err := j.checkFields(); err != nil {
		return nil, err
	}
	if err := checkHashFormat(j.ContentHash); err != nil {
		return nil, err
	}
	meta, err := CanonicalJSON(j.Metadata)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(j.Text) {
		return nil, &DecodeError{Field: "text", Reason: "is not valid UTF-8", Err: ErrInvalidUTF8}
	}
	if got := contentHash(j.Text, meta); got != j.ContentHash {
		return nil, invalid("content_hash", fmt.Sprintf("is %s but text and metadata hash to %s", j.ContentHash, got))
	}
	return meta, nil
}

// checkFields applies every rule but those on the content hash, text and
// metadata.
func (j *ChunkJob) checkFields() error {
	checks := []func() error{
		func() error { return checkSchemaValue(j.Schema, ChunkJobSchema, "ChunkJobSchema") },
		func() error { return checkID("doc_id", j.DocID, true) },
		func() error { return checkRange("chunk_count", int64(j.ChunkCount), 1, maxInt32) },
		func() error { return checkChunkIndex(j.ChunkIndex, j.ChunkCount) },
		func() error { return checkMin("doc_version", j.DocVersion, 1) },
		func() error { return ValidateSourceID(j.SourceID) },
		func() error { return checkNativeID(j.SourceNativeID, true) },
		func() error { return checkToken("run_id", j.RunID, maxIDLen, true) },
		func() error { return checkToken("codec", j.Codec, maxTokenLen, false) },
		func() error { return checkTime("published_at", j.PublishedAt, true) },
		func() error { return checkRange("replay_gen", int64(j.ReplayGen), 0, maxInt32) },
		j.checkReplay,
		func() error { return checkToken("replay_id", j.ReplayID, maxIDLen, false) },
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// checkReplay insists that a replay names its dead letter: without it the
// replayer could not mark the dead letter replayed, and the same failure
// would be replayed again.
func (j *ChunkJob) checkReplay() error {
	if j.DeadLetterID == "" && (j.ReplayGen > 0 || j.ReplayID != "") {
		return &DecodeError{
			Field:  "dead_letter_id",
			Reason: "required on a replay (replay_gen > 0 or replay_id set)",
			Err:    ErrMissingField,
		}
	}
	return checkID("dead_letter_id", j.DeadLetterID, false)
}

func checkChunkIndex(index, count int) error {
	if index < 0 {
		return invalid("chunk_index", fmt.Sprintf("is %d; it must not be negative", index))
	}
	if index >= count {
		return invalid("chunk_index", fmt.Sprintf("is %d but chunk_count is %d; it must be less", index, count))
	}
	return nil
}

// ValidateNativeID checks a document's id in its source system: non-empty,
// at most 4,096 bytes of UTF-8 without NUL. A producer parks a document
// whose id fails, under StorableNativeID.
func ValidateNativeID(s string) error { return checkNativeID(s, true) }

// StorableNativeID returns s when it is a valid native id, and otherwise a
// stand-in that is: s with invalid UTF-8 and NUL escaped, cut to 200
// bytes, and suffixed with a hash of the whole original, so that distinct
// bad ids stay distinct and an operator can still recognise the record.
func StorableNativeID(s string) string {
	if ValidateNativeID(s) == nil {
		return s
	}
	if s == "" {
		return "(empty id)"
	}
	q := strconv.QuoteToASCII(s)
	q = q[1 : len(q)-1]
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	return q + " #" + shortHash(s)[:16]
}

func checkNativeID(s string, required bool) error {
	if s == "" && required {
		return missing("source_native_id")
	}
	return checkString("source_native_id", s, maxNativeIDBytes)
}

func checkHashFormat(s string) error {
	if s == "" {
		return missing("content_hash")
	}
	if len(s) != 64 || indexFunc(s, func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }) >= 0 {
		return invalid("content_hash", "must be 64 lowercase hex characters (a SHA-256 from ContentHash)")
	}
	return nil
}
