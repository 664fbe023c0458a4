package secrets

// Flag says why one chunk of a document must not leave the process.
type Flag struct {
	// Chunk is the chunk's index in the spans given to ScanDocument.
	Chunk int
	// Rule names the secret: the first match overlapping the chunk, or the
	// first finding in the metadata, which every chunk carries.
	Rule string
}

// Config says how much of a document holding a secret ScanDocument
// withholds. The zero Config is the default.
type Config struct {
	// WithholdDocument flags every chunk of a document in which anything
	// is found, not only the chunks a secret touches. It trades the rest
	// of the document's text, which is then never embedded, for safety
	// against a secret the rules find only in part (a key whose BEGIN line
	// was mangled, a password on the line after its name). Defaults to
	// false.
	WithholdDocument bool
}

// ScanDocument screens a document with the default Config.
func ScanDocument(text string, meta map[string]any, spans []Span) []Flag {
	return Config{}.ScanDocument(text, meta, spans)
}

// ScanDocument screens a document before it is chunked out: its text, its
// metadata and the spans of its chunks in that text. It returns one Flag
// per chunk holding any part of a secret, in chunk order; every chunk
// when the metadata holds one, or when the text does and
// c.WithholdDocument is set. Nil means the document is clean.
func (c Config) ScanDocument(text string, meta map[string]any, spans []Span) []Flag {
	if found := ScanMetadata(meta); len(found) > 0 {
		return flagAll(spans, found[0].Rule)
	}
	matches := Scan(text)
	if len(matches) == 0 {
		return nil
	}
	if c.WithholdDocument {
		return flagAll(spans, matches[0].Rule)
	}
	var flags []Flag
	for i, s := range spans {
		if m, ok := s.firstMatch(matches); ok {
			flags = append(flags, Flag{Chunk: i, Rule: m.Rule})
		}
	}
	return flags
}

// flagAll flags every chunk under rule.
func flagAll(spans []Span, rule string) []Flag {
	flags := make([]Flag, len(spans))
	for i := range spans {
		flags[i] = Flag{Chunk: i, Rule: rule}
	}
	return flags
}
