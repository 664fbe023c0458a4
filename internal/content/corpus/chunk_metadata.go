package corpus

import (
	"encoding/json"
	"maps"
)

// ChunkMetadata returns the metadata of the chunk Text[start:end] of d,
// whose own metadata is meta as Admit canonicalised it. A chunk of a
// document with pages (a PDF's, a PPTX's or ODP's slides) adds the page
// it came from, "page": N, or the first and last, "pages": [a, b], and
// for scanned pages each one's OCR confidence by page number,
// "ocr_confidence": {"3": 0.91}; any
// other chunk shares meta as it is, so that a document without pages is
// canonicalised once, not once per chunk.
func (d Document) ChunkMetadata(meta json.RawMessage, start, end int) (json.RawMessage, error) {
	if len(d.Pages) == 0 {
		return meta, nil
	}
	first, last := d.PagesOf(start, end)
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
	if ocr := d.ocrOf(start, end); ocr != nil {
		m["ocr_confidence"] = ocr
	}
	return metadataJSON(m)
}
