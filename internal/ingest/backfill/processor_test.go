package backfill

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store/generation"
)

func TestDecodeRefusesWhatNamesNoChunkOfALaterGeneration(t *testing.T) {
	t.Parallel()
	good := generation.Owed{Generation: 2, DocID: "d", ChunkIndex: 3, Version: 4, ContentHash: "h", SourceID: "s"}
	raw, err := Encode(good)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Decode(raw); err != nil || got != good {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", good, got, err)
	}
	for name, tc := range map[string]struct {
		raw, want string
	}{
		"not JSON":      {`{"generation": 2`, "decode backfill message"},
		"generation 1":  {`{"generation": 1, "doc_id": "d", "chunk_index": 0, "version": 1, "content_hash": "h", "source_id": "s"}`, "only later generations"},
		"no generation": {`{"doc_id": "d", "chunk_index": 0, "version": 1, "content_hash": "h", "source_id": "s"}`, "only later generations"},
		"no doc":        {`{"generation": 2, "chunk_index": 0, "version": 1, "content_hash": "h", "source_id": "s"}`, "lacks"},
		"no version":    {`{"generation": 2, "doc_id": "d", "chunk_index": 0, "content_hash": "h", "source_id": "s"}`, "lacks"},
		"no source":     {`{"generation": 2, "doc_id": "d", "chunk_index": 0, "version": 1, "content_hash": "h"}`, "lacks"},
		"negative":      {`{"generation": 2, "doc_id": "d", "chunk_index": -1, "version": 1, "content_hash": "h", "source_id": "s"}`, "lacks"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode([]byte(tc.raw)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode(%s) = %v, want an error saying %q", tc.raw, err, tc.want)
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
