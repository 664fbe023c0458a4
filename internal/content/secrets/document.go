package secrets

import "slices"

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
	// Allow names the rules whose findings the document may hold: the
	// source's secrets_allow in the policy file, the operator's call on a
	// false positive such as an example password in documentation. What
	// they alone find flags nothing; any other rule still does. Defaults
	// to none.
	Allow []string
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
	if found := slices.DeleteFunc(ScanMetadata(meta), func(f Finding) bool { return slices.Contains(c.Allow, f.Rule) }); len(found) > 0 {
		return flagAll(spans, found[0].Rule)
	}
	matches := slices.DeleteFunc(Scan(text), func(m Match) bool { return slices.Contains(c.Allow, m.Rule) })
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
