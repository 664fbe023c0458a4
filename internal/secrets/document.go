package secrets

// Flag says why one chunk of a document must not leave the process.
type Flag struct {
	// Chunk is the chunk's index in the spans given to ScanDocument.
	Chunk int
	// Rule names the secret: the first match overlapping the chunk, or the
	// first finding in the metadata, which every chunk carries.
	Rule string
}

// ScanDocument screens a document before it is chunked out: its text, its
// metadata and the spans of its chunks in that text. It returns one Flag
// per chunk holding any part of a secret, in chunk order; every chunk
// when the metadata holds one. Nil means the document is clean.
func ScanDocument(text string, meta map[string]any, spans []Span) []Flag {
	var flags []Flag
	if found := ScanMetadata(meta); len(found) > 0 {
		for i := range spans {
			flags = append(flags, Flag{Chunk: i, Rule: found[0].Rule})
		}
		return flags
	}
	matches := Scan(text)
	if len(matches) == 0 {
		return nil
	}
	for i, s := range spans {
		if m, ok := s.firstMatch(matches); ok {
			flags = append(flags, Flag{Chunk: i, Rule: m.Rule})
		}
	}
	return flags
}
