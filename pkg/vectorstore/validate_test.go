package vectorstore_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func() vectorstore.Record {
		return vectorstore.Record{
			DocID: "doc", ChunkIndex: 3, Version: 2, ContentHash: "h", Model: "m",
			Embedding: []float32{0.5, -0.25, 1e-40, 0}, Text: "text",
		}
	}
	cases := []struct {
		name  string
		edit  func(*vectorstore.Record)
		class string // empty: valid
	}{
		{"Valid", func(*vectorstore.Record) {}, ""},
		{"EmptyTextAndHash", func(r *vectorstore.Record) { r.Text, r.ContentHash = "", "" }, ""},
		{"ZeroVector", func(r *vectorstore.Record) { r.Embedding = make([]float32, 4) }, ""},
		{"MetadataObject", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(" \n{\"a\": [1, {}]}") }, ""},
		{"MetadataEscapedBackslashU0000", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`{"a": "\\u0000"}`) }, ""},
		{"MetadataEscapedNULAfterBackslashes", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`{"a": "\\\u0000"}`) }, classify.ClassInvalidMessage},
		{"MetadataEscapedNULLater", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`{"a": "\\u0000", "b": "\u0000"}`) }, classify.ClassInvalidMessage},
		{"MetadataNull", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`null`) }, classify.ClassInvalidMessage},
		{"MetadataString", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`"{}"`) }, classify.ClassInvalidMessage},
		{"MetadataTrailingGarbage", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`{} x`) }, classify.ClassInvalidMessage},
		{"MetadataEmpty", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(``) }, classify.ClassInvalidMessage},
		{"ShortVector", func(r *vectorstore.Record) { r.Embedding = r.Embedding[:3] }, classify.ClassDimensionMismatch},
		{"NilVector", func(r *vectorstore.Record) { r.Embedding = nil }, classify.ClassDimensionMismatch},
		{"NaN", func(r *vectorstore.Record) { r.Embedding[0] = float32(math.NaN()) }, classify.ClassInvalidVector},
		{"MaxFloatIsFinite", func(r *vectorstore.Record) { r.Embedding[0] = -math.MaxFloat32 }, ""},
		{"NegInf", func(r *vectorstore.Record) { r.Embedding[3] = float32(math.Inf(-1)) }, classify.ClassInvalidVector},
		{"ChunkIndexTooLarge", func(r *vectorstore.Record) { r.ChunkIndex = math.MaxInt32 + 1 }, classify.ClassInvalidMessage},
		{"ChunkIndexMax", func(r *vectorstore.Record) { r.ChunkIndex = math.MaxInt32 }, ""},
		{"NegativeVersion", func(r *vectorstore.Record) { r.Version = -1 }, classify.ClassInvalidMessage},
		{"InvalidUTF8Model", func(r *vectorstore.Record) { r.Model = "\xc3" }, classify.ClassInvalidEncoding},
		{"NULInHash", func(r *vectorstore.Record) { r.ContentHash = "h\x00" }, classify.ClassInvalidEncoding},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := valid()
			c.edit(&rec)
			err := vectorstore.Validate(rec, 4)
			if c.class == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			d := classify.Classify(err)
			if d.Disposition != classify.Quarantine || d.Class != c.class {
				t.Fatalf("Validate: %v classifies as %s/%s, want quarantine/%s", err, d.Disposition, d.Class, c.class)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, want := range map[vectorstore.Outcome]string{
		vectorstore.Inserted: "inserted", vectorstore.Updated: "updated",
		vectorstore.Unchanged: "unchanged", vectorstore.Stale: "stale", 0: "outcome(0)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}
