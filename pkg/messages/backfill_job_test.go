package messages_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pkg/messages"
)

func newBackfillJob(t testing.TB) messages.BackfillJob {
	t.Helper()
	hash, err := messages.ContentHash("a chunk", nil)
	if err != nil {
		t.Fatal(err)
	}
	return messages.BackfillJob{Schema: messages.BackfillJobSchema, Generation: 2, DocID: messages.DocID("wiki", "a.md"),
		ChunkIndex: 3, DocVersion: 4, ContentHash: hash, SourceID: "wiki"}
}

func TestBackfillJobRoundTrip(t *testing.T) {
	t.Parallel()
	want := newBackfillJob(t)
	raw, err := want.Encode()
	if err != nil {
		t.Fatal(err)
	}
	wantRaw := `{"schema":1,"generation":2,"doc_id":"` + want.DocID + `","chunk_index":3,"doc_version":4,"content_hash":"` +
		want.ContentHash + `","source_id":"wiki"}`
	if string(raw) != wantRaw {
		t.Errorf("Encode = %s\nwant %s", raw, wantRaw)
	}
	got, err := messages.DecodeBackfillJob(raw)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeBackfillJob(Encode(%+v)) = %+v, %v", want, got, err)
	}
}

// Messages the planner wrote before schema 1 (generation.Owed in JSON)
// may still be in INGEST after an upgrade: they decode as schema 1.
func TestDecodeBackfillJobReadsTheUnversionedForm(t *testing.T) {
	t.Parallel()
	want := newBackfillJob(t)
	old := `{"generation":2,"doc_id":"` + want.DocID + `","chunk_index":3,"version":4,"content_hash":"` + want.ContentHash + `","source_id":"wiki"}`
	got, err := messages.DecodeBackfillJob([]byte(old))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeBackfillJob(%s) = %+v, %v; want %+v", old, got, err, want)
	}
	again, err := got.Encode()
	if err != nil || !bytes.Contains(again, []byte(`"schema":1`)) {
		t.Errorf("re-encoding of the unversioned form: %s, %v; want schema 1", again, err)
	}
}

func TestDecodeBackfillJobRejects(t *testing.T) {
	t.Parallel()
	good, err := (func() *messages.BackfillJob { j := newBackfillJob(t); return &j })().Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := string(good)
	for name, tc := range map[string]struct {
		raw, field string
		is         error
	}{
		"not JSON":          {s[:len(s)/2], "", messages.ErrInvalid},
		"newer schema":      {strings.Replace(s, `"schema":1`, `"schema":2`, 1), "schema", messages.ErrUnknownSchema},
		"generation 1":      {strings.Replace(s, `"generation":2`, `"generation":1`, 1), "generation", messages.ErrInvalid},
		"no generation":     {strings.Replace(s, `"generation":2,`, ``, 1), "generation", messages.ErrMissingField},
		"negative index":    {strings.Replace(s, `"chunk_index":3`, `"chunk_index":-1`, 1), "chunk_index", messages.ErrInvalid},
		"version 0":         {strings.Replace(s, `"doc_version":4`, `"doc_version":0`, 1), "doc_version", messages.ErrInvalid},
		"short hash":        {strings.Replace(s, `"content_hash":"`, `"content_hash":"ab`, 1), "content_hash", messages.ErrInvalid},
		"bad source":        {strings.Replace(s, `"source_id":"wiki"`, `"source_id":"a.b"`, 1), "source_id", messages.ErrInvalid},
		"unknown field":     {strings.Replace(s, `"schema":1,`, `"schema":1,"extra":true,`, 1), "extra", messages.ErrInvalid},
		"duplicate field":   {strings.Replace(s, `"schema":1,`, `"schema":1,"schema":1,`, 1), "schema", messages.ErrInvalid},
		"old key in v1":     {strings.Replace(s, `"doc_version"`, `"version"`, 1), "version", messages.ErrInvalid},
		"new key unversion": {strings.Replace(s, `"schema":1,`, ``, 1), "doc_version", messages.ErrInvalid},
		"trailing data":     {s + "x", "", messages.ErrInvalid},
		"oversize":          {`{"doc_id":"` + strings.Repeat("a", messages.MaxBackfillJobBytes) + `"}`, "", messages.ErrOversize},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := messages.DecodeBackfillJob([]byte(tc.raw))
			d, ok := errors.AsType[*messages.DecodeError](err)
			if !ok || !errors.Is(err, tc.is) || d.Field != tc.field {
				t.Errorf("DecodeBackfillJob(%.80s) = %v; want a *DecodeError on field %q matching %v", tc.raw, err, tc.field, tc.is)
			}
		})
	}
}

func FuzzDecodeBackfillJob(f *testing.F) {
	j := newBackfillJob(f)
	good, err := j.Encode()
	if err != nil {
		f.Fatal(err)
	}
	s := string(good)
	for _, seed := range []string{
		s,
		strings.Replace(strings.Replace(s, `"schema":1,`, ``, 1), `"doc_version"`, `"version"`, 1),
		strings.Replace(s, `"schema":1`, `"schema":2`, 1),
		strings.Replace(s, `"generation":2`, `"generation":1`, 1),
		strings.Replace(s, `"wiki"`, "\"wi\xffki\"", 1),
		strings.Replace(s, `"schema":1,`, `"schema":null,`, 1),
		s + "garbage",
		"", "null", "{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := messages.DecodeBackfillJob(data)
		if err != nil {
			checkRejection(t, err)
			return
		}
		first, err := j.Encode()
		if err != nil {
			t.Fatalf("a decoded job does not encode: %v\ninput: %q", err, data)
		}
		again, err := messages.DecodeBackfillJob(first)
		if err != nil || !reflect.DeepEqual(again, j) {
			t.Fatalf("decode(encode(job)) = %+v, %v; want %+v", again, err, j)
		}
		second, err := again.Encode()
		if err != nil || !bytes.Equal(second, first) {
			t.Fatalf("encoding is not stable (%v):\n first %q\nsecond %q", err, first, second)
		}
	})
}
