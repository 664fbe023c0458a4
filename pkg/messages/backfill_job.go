package messages

import (
	"errors"
	"fmt"
)

// BackfillJobSchema is the only BackfillJob version this build writes. It
// also reads the unversioned form written before it (see
// DecodeBackfillJob).
const BackfillJobSchema = 1

// MaxBackfillJobBytes caps an encoded BackfillJob: every field at its
// limit fits with room to spare.
const MaxBackfillJobBytes = 4 << 10

// FirstBackfilledGeneration is the lowest index generation a BackfillJob
// names: generation 1 is written by the live path, never backfilled.
const FirstBackfilledGeneration = 2

// BackfillJob is one stored chunk an index generation after the first
// still owes: the backfill writes it into that generation from the text
// the manifest holds. It travels on BackfillSubject(SourceID), with
// Nats-Msg-Id BackfillMsgID of its queue row.
type BackfillJob struct {
	// Schema must be BackfillJobSchema.
	Schema int
	// Generation is the index generation that owes the chunk, at least
	// FirstBackfilledGeneration.
	Generation int
	// DocID is the chunk's document, as in ChunkJob.
	DocID string
	// ChunkIndex is the chunk's position in its document, 0 to 2³¹−1.
	ChunkIndex int
	// DocVersion is the document version the chunk belongs to, ≥ 1.
	DocVersion int64
	// ContentHash is the chunk's content hash (ContentHash), which the
	// backfill checks against the manifest before writing.
	ContentHash string
	// SourceID names the corpus; see ValidateSourceID.
	SourceID string
}

// backfillJobWire fixes the order and spelling of the encoded fields.
type backfillJobWire struct {
	Schema      int    `json:"schema"`
	Generation  int    `json:"generation"`
	DocID       string `json:"doc_id"`
	ChunkIndex  int    `json:"chunk_index"`
	DocVersion  int64  `json:"doc_version"`
	ContentHash string `json:"content_hash"`
	SourceID    string `json:"source_id"`
}

// Validate reports the first rule b breaks as a *DecodeError, or nil. It
// applies exactly the rules DecodeBackfillJob applies.
func (b *BackfillJob) Validate() error {
	checks := []func() error{
		func() error { return checkSchemaValue(b.Schema, BackfillJobSchema, "BackfillJobSchema") },
		func() error {
			return checkRange("generation", int64(b.Generation), FirstBackfilledGeneration, maxInt32)
		},
		func() error { return checkID("doc_id", b.DocID, true) },
		func() error { return checkRange("chunk_index", int64(b.ChunkIndex), 0, maxInt32) },
		func() error { return checkMin("doc_version", b.DocVersion, 1) },
		func() error { return checkHashFormat(b.ContentHash) },
		func() error { return ValidateSourceID(b.SourceID) },
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// Encode validates b and returns its canonical encoding: compact JSON
// with fields in the documented order and no trailing newline. It fails
// with an error matching ErrInvalid when b is invalid.
func (b *BackfillJob) Encode() ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	out, err := marshal(backfillJobWire{Schema: b.Schema, Generation: b.Generation, DocID: b.DocID, ChunkIndex: b.ChunkIndex,
		DocVersion: b.DocVersion, ContentHash: b.ContentHash, SourceID: b.SourceID})
	if err != nil {
		return nil, fmt.Errorf("encode backfill job: %w", err)
	}
	return out, checkSize(out, MaxBackfillJobBytes)
}

// backfillJobIn is a backfill job as read off the wire: nil where a
// member is absent or null.
type backfillJobIn struct {
	Schema, Generation, ChunkIndex *int
	DocVersion                     *int64
	DocID, ContentHash, SourceID   *string
}

// fields lists the members of a backfill job, in the order their absence
// is reported; version is the document version's key ("doc_version",
// or "version" in the unversioned form).
func (in *backfillJobIn) fields(version string) []field {
	return []field{
		{"generation", &in.Generation, wantInt, true},
		{"doc_id", &in.DocID, wantString, true},
		{"chunk_index", &in.ChunkIndex, wantInt, true},
		{version, &in.DocVersion, wantInt, true},
		{"content_hash", &in.ContentHash, wantString, true},
		{"source_id", &in.SourceID, wantString, true},
	}
}

// DecodeBackfillJob strictly decodes an encoded BackfillJob, with the
// rules and errors of DecodeChunkJob, the limit MaxBackfillJobBytes and
// the schema BackfillJobSchema. Every field is required.
//
// A message without a schema member is read as the unversioned form the
// planner wrote before schema 1, still in a stream after an upgrade: the
// same members with "version" for "doc_version", as strictly. It decodes
// as schema 1.
func DecodeBackfillJob(data []byte) (BackfillJob, error) {
	var in backfillJobIn
	fields := append([]field{{"schema", &in.Schema, wantInt, false}}, in.fields("doc_version")...)
	err := readObject(data, MaxBackfillJobBytes, BackfillJobSchema, fields)
	if d, ok := errors.AsType[*DecodeError](err); ok && d.Field == "schema" && errors.Is(err, ErrMissingField) {
		in = backfillJobIn{}
		err = readObject(data, MaxBackfillJobBytes, unversioned, in.fields("version"))
		schema := BackfillJobSchema
		in.Schema = &schema
	}
	if err != nil {
		return BackfillJob{}, err
	}
	b := BackfillJob{Schema: *in.Schema, Generation: *in.Generation, DocID: *in.DocID, ChunkIndex: *in.ChunkIndex,
		DocVersion: *in.DocVersion, ContentHash: *in.ContentHash, SourceID: *in.SourceID}
	if err := b.Validate(); err != nil {
		return BackfillJob{}, err
	}
	return b, nil
}
