package backfill

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestDecodeRefusesWhatNamesNoChunkOfALaterGeneration(t *testing.T) {
	t.Parallel()
	hash, err := messages.ContentHash("a chunk", nil)
	if err != nil {
		t.Fatal(err)
	}
	good := generation.Owed{Generation: 2, DocID: "d", ChunkIndex: 3, Version: 4, ContentHash: hash, SourceID: "s"}
	raw, err := Encode(good)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Decode(raw); err != nil || got != good {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", good, got, err)
	}
	// The form written before messages.BackfillJob, which may still be
	// in INGEST after an upgrade.
	old := `{"generation": 2, "doc_id": "d", "chunk_index": 3, "version": 4, "content_hash": "` + hash + `", "source_id": "s"}`
	if got, err := Decode([]byte(old)); err != nil || got != good {
		t.Fatalf("Decode(%s) = %+v, %v; want %+v", old, got, err, good)
	}
	body := func(gen, index int, version, source string) string {
		return `{"schema": 1, "generation": ` + strconv.Itoa(gen) + `, "doc_id": "d", "chunk_index": ` + strconv.Itoa(index) +
			`, "doc_version": ` + version + `, "content_hash": "` + hash + `", "source_id": "` + source + `"}`
	}
	for name, tc := range map[string]struct {
		raw, field string
	}{
		"not JSON":      {`{"generation": 2`, ""},
		"generation 1":  {body(1, 0, "1", "s"), "generation"},
		"no generation": {strings.Replace(body(2, 0, "1", "s"), `"generation": 2, `, "", 1), "generation"},
		"no version":    {strings.Replace(body(2, 0, "1", "s"), `, "doc_version": 1`, "", 1), "doc_version"},
		"no source":     {body(2, 0, "1", ""), "source_id"},
		"negative":      {body(2, -1, "1", "s"), "chunk_index"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.raw))
			d, ok := errors.AsType[*messages.DecodeError](err)
			if !ok || d.Field != tc.field || !strings.Contains(err.Error(), "decode backfill message") {
				t.Errorf("Decode(%s) = %v, want a decode error on field %q", tc.raw, err, tc.field)
			}
		})
	}
}

func TestMsgIDNamesTheQueueRow(t *testing.T) {
	t.Parallel()
	a := generation.Owed{ID: 7, Generation: 2, DocID: "d", Version: 1}
	b := a
	b.ID = 8
	if MsgID(a) == MsgID(b) {
		t.Errorf("two queue rows of one chunk share the message id %q: a chunk owed again would be dropped as a duplicate", MsgID(a))
	}
	if again := a; MsgID(again) != MsgID(a) || !strings.HasPrefix(MsgID(a), "bf:") {
		t.Errorf("MsgID(%+v) = %q, want a stable bf: id", a, MsgID(a))
	}
}
