package drill

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
)

func TestPayloadIntact(t *testing.T) {
	const text = "Fault drill x, case not-found: marker. The sluice gate opens at dawn."
	encode := func(text string, hash func(string) string) []byte {
		t.Helper()
		h, err := messages.ContentHash(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		j := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: "d", DocVersion: 1, ChunkCount: 1, SourceID: "drill",
			SourceNativeID: "n", RunID: "r", ContentHash: hash(h), Text: text, PublishedAt: time.Unix(1, 0)}
		raw, err := j.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	same := func(h string) string { return h }
	published := encode(text, same)
	for _, c := range []struct {
		name    string
		payload []byte
		want    bool
	}{
		{"verbatim", published, true},
		{"missing", nil, false},
		{"not a job", []byte(`{"hello":1}`), false},
		{"other text", encode("another text", same), false},
	} {
		got := payloadIntact(outcome{text: text, job: published}, deadLetter{payload: c.payload})
		if got.Passed != c.want {
			t.Errorf("%s: passed %v, want %v (%s)", c.name, got.Passed, c.want, got.Detail)
		}
	}
}
