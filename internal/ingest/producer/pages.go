package producer

import (
	"encoding/json"
	"maps"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/pkg/messages"
)

// chunkMetadata is the metadata of chunk c of document d, whose own
// metadata is meta (as corpus.Admit canonicalised it). A chunk of a
// document with pages (a PDF's, a PPTX's or ODP's slides) adds the page
// it came from, "page": N, or the first and last, "pages": [a, b]; any
// other chunk shares meta as it is, so that a document without pages is
// canonicalised once, not once per chunk.
func chunkMetadata(d corpus.Document, c chunk.Chunk, meta json.RawMessage) (json.RawMessage, error) {
	if len(d.Pages) == 0 {
		return meta, nil
	}
	first, last := d.PagesOf(c.Start, c.End)
	if first == 0 {
		return meta, nil
	}
	m := maps.Clone(d.Metadata)
	if m == nil {
		m = map[string]any{}
	}
	if first == last {
		m["page"] = first
	} else {
		m["pages"] = []int{first, last}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return messages.CanonicalJSON(raw)
}
