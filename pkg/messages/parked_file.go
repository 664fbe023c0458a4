package messages

import (
	"fmt"
	"regexp"
)

// ParkedFileSchema is the only ParkedFile version this build reads and
// writes.
const ParkedFileSchema = 1

// maxParkedFileBytes bounds an encoded ParkedFile: a path and a few
// short fields.
const maxParkedFileBytes = 16 << 10

// ParkedFile is the payload of a document-level dead letter: a file the
// producer parked whole, before it was chunked (unsupported format,
// undecodable text, over a size limit, unreadable, a repeated id). There
// is no chunk job to carry, so it carries the file's identity instead:
// what `sluice dlq show` prints, and what an operator needs to find the
// file and see whether it changed.
type ParkedFile struct {
	// Schema must be ParkedFileSchema.
	Schema int `json:"schema"`
	// SourceNativeID is the document's id in its source: the file's path
	// relative to the walked input, or its base name.
	SourceNativeID string `json:"source_native_id"`
	// Path is the file as the producer was told it (the input joined
	// with the relative path), "-" for stdin; empty when unknown.
	Path string `json:"path"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// Format is the format detected from the content ("pdf", "binary",
	// "text", ...); empty when the file could not be read.
	Format string `json:"format,omitempty"`
	// MIME is the detected media type, for humans.
	MIME string `json:"mime,omitempty"`
	// SHA256 is the hex SHA-256 of the file's bytes; empty when they
	// were not read to the end.
	SHA256 string `json:"sha256,omitempty"`
	// Status is the reader's verdict: "unsupported", "undecodable",
	// "invalid", ...
	Status string `json:"status"`
	// Kept says whether the file's bytes are kept for a replay: KeptFile
	// or NotKeptFile; empty in a dead letter written before bytes were
	// kept.
	Kept string `json:"kept,omitempty"`
	// NotKeptReason says why they are not, when Kept is NotKeptFile.
	NotKeptReason string `json:"not_kept_reason,omitempty"`
}

// Values of ParkedFile.Kept.
const (
	// KeptFile means the file's bytes are kept, by their SHA-256.
	KeptFile = "kept"
	// NotKeptFile means they are not: over the size cap, unreadable,
	// changed since they were read, or not a file (stdin).
	NotKeptFile = "not_kept"
)

type parkedFileIn struct {
	Schema                             *int
	Bytes                              *int64
	SourceNativeID, Path, Format, MIME *string
	SHA256, Status                     *string
	Kept, NotKeptReason                *string
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Validate reports the first rule p breaks as a *DecodeError, or nil.
func (p *ParkedFile) Validate() error {
	for _, err := range []error{
		checkSchemaValue(p.Schema, ParkedFileSchema, "ParkedFileSchema"),
		checkNativeID(p.SourceNativeID, true),
		checkString("path", p.Path, 4096),
		checkMin("bytes", p.Bytes, 0),
		checkToken("format", p.Format, maxTokenLen, false),
		checkString("mime", p.MIME, 255),
		checkToken("status", p.Status, maxTokenLen, true),
		checkString("not_kept_reason", p.NotKeptReason, 512),
	} {
		if err != nil {
			return err
		}
	}
	if p.Kept != "" && p.Kept != KeptFile && p.Kept != NotKeptFile {
		return invalid("kept", "must be "+KeptFile+" or "+NotKeptFile)
	}
	if p.Kept == KeptFile && p.SHA256 == "" {
		return invalid("kept", "kept bytes need their sha256")
	}
	if p.SHA256 != "" && !sha256Hex.MatchString(p.SHA256) {
		return invalid("sha256", "must be 64 lower-case hex digits")
	}
	return nil
}

// Encode validates p and returns its compact JSON encoding, fields in
// their documented order.
func (p *ParkedFile) Encode() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out, err := marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode parked file: %w", err)
	}
	return out, checkSize(out, maxParkedFileBytes)
}

// DecodeParkedFile strictly decodes an encoded ParkedFile, with the rules
// of DecodeChunkJob: unknown, repeated or case-mismatched keys are
// errors, and so is a missing required field (schema, source_native_id,
// path, bytes, status).
func DecodeParkedFile(data []byte) (ParkedFile, error) {
	var in parkedFileIn
	if err := readObject(data, maxParkedFileBytes, ParkedFileSchema, []field{
		{"schema", &in.Schema, wantInt, false},
		{"source_native_id", &in.SourceNativeID, wantString, true},
		{"path", &in.Path, wantString, true},
		{"bytes", &in.Bytes, wantInt, true},
		{"format", &in.Format, wantString, false},
		{"mime", &in.MIME, wantString, false},
		{"sha256", &in.SHA256, wantString, false},
		{"status", &in.Status, wantString, true},
		{"kept", &in.Kept, wantString, false},
		{"not_kept_reason", &in.NotKeptReason, wantString, false},
	}); err != nil {
		return ParkedFile{}, err
	}
	p := ParkedFile{Schema: *in.Schema, SourceNativeID: *in.SourceNativeID, Path: *in.Path, Bytes: *in.Bytes,
		Format: deref(in.Format), MIME: deref(in.MIME), SHA256: deref(in.SHA256), Status: *in.Status,
		Kept: deref(in.Kept), NotKeptReason: deref(in.NotKeptReason)}
	if err := p.Validate(); err != nil {
		return ParkedFile{}, err
	}
	return p, nil
}
