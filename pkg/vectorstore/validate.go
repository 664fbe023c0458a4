package vectorstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Validate reports whether rec can be stored by a store of the given
// dimension. It returns nil or a permanent classify error whose class says
// what is wrong: dimension_mismatch, invalid_vector (NaN or ±Inf),
// invalid_encoding (a string PostgreSQL would refuse: invalid UTF-8 or a NUL
// byte) or invalid_message (a missing or out-of-range field, metadata that is
// not a JSON object). Upsert runs it on every record; callers that want to
// park every bad record of a batch at once can run it themselves.
func Validate(rec Record, dims int) error {
	if len(rec.Embedding) != dims {
		return classify.Permanentf(classify.ClassDimensionMismatch,
			"embedding of chunk %s/%d has %d dimensions, the store has %d", rec.DocID, rec.ChunkIndex, len(rec.Embedding), dims)
	}
	if i := nonFinite(rec.Embedding); i >= 0 {
		return classify.Permanentf(classify.ClassInvalidVector,
			"embedding of chunk %s/%d holds %v at %d", rec.DocID, rec.ChunkIndex, rec.Embedding[i], i)
	}
	if rec.DocID == "" {
		return classify.Permanentf(classify.ClassInvalidMessage, "record has no doc_id")
	}
	if rec.ChunkIndex < 0 || rec.ChunkIndex > math.MaxInt32 {
		return classify.Permanentf(classify.ClassInvalidMessage,
			"chunk index %d of %s is outside 0..%d", rec.ChunkIndex, rec.DocID, math.MaxInt32)
	}
	if rec.Version < 1 {
		return classify.Permanentf(classify.ClassInvalidMessage,
			"chunk %s/%d has version %d, versions start at 1", rec.DocID, rec.ChunkIndex, rec.Version)
	}
	for _, f := range [...]struct{ name, value string }{
		{"doc_id", rec.DocID},
		{"content_hash", rec.ContentHash},
		{"model", rec.Model},
		{"text", rec.Text},
	} {
		if err := storableText(f.value); err != nil {
			return classify.Permanentf(classify.ClassInvalidEncoding, "%s of chunk %d: %w", f.name, rec.ChunkIndex, err)
		}
	}
	if err := jsonObject(rec.Metadata); err != nil {
		return classify.Permanentf(classify.ClassInvalidMessage, "metadata of chunk %s/%d: %w", rec.DocID, rec.ChunkIndex, err)
	}
	return nil
}

// validateQuery checks a search vector. A zero vector is refused because
// cosine similarity to it is undefined.
func validateQuery(q []float32, dims int) error {
	if len(q) != dims {
		return classify.Permanentf(classify.ClassDimensionMismatch,
			"query has %d dimensions, the store has %d", len(q), dims)
	}
	if i := nonFinite(q); i >= 0 {
		return classify.Permanentf(classify.ClassInvalidVector, "query holds %v at %d", q[i], i)
	}
	for _, v := range q {
		if v != 0 {
			return nil
		}
	}
	return classify.Permanentf(classify.ClassInvalidVector, "query is the zero vector, which has no direction")
}

// nonFinite returns the index of the first NaN or ±Inf in v, or -1. It tests
// the exponent bits, which are all ones for exactly those values.
func nonFinite(v []float32) int {
	for i, f := range v {
		if math.Float32bits(f)&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}

// storableText rejects what a PostgreSQL text column refuses, which would
// otherwise fail the whole batch with a data exception.
func storableText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("holds a NUL byte")
	}
	return nil
}

// jsonObject accepts nil or a JSON object that jsonb can hold: jsonb refuses
// the escape \u0000, which plain JSON allows.
func jsonObject(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(raw) {
		return fmt.Errorf("not a JSON object")
	}
	if escapedNUL(raw) {
		return fmt.Errorf(`holds \u0000, which jsonb cannot store`)
	}
	return nil
}

// escapedNUL reports whether raw holds the escape \u0000 itself, as opposed
// to an escaped backslash followed by the letters u0000.
func escapedNUL(raw []byte) bool {
	const esc = `\u0000`
	for off := 0; ; {
		i := bytes.Index(raw[off:], []byte(esc))
		if i < 0 {
			return false
		}
		i += off
		backslashes := 0
		for j := i - 1; j >= 0 && raw[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return true
		}
		off = i + len(esc)
	}
}
