package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Formats is the producer's part of the policy file: each source's
// formats list, which narrows what a run of the source reads to the
// files whose detected format it names. A source without a list takes
// the default section's; no list at all reads every format.
type Formats struct {
	def     []string
	sources map[string][]string
	// allow is each source's secrets_allow, which the producer's secrets
	// screen honours as the consumer's compliance stage does.
	allow map[string][]string
	// records is each source's record schema.
	records map[string]Records
	// defOCR and ocr are the default section's and each source's OCR
	// keys (see OCR).
	defOCR ocrKeys
	ocr    map[string]ocrKeys
}

// Records is a source's record schema (its records setting): how each row
// of its CSV, TSV, JSON, JSONL, XLSX and ODS files becomes a document of
// its own.
type Records struct {
	// ID is the field whose value is the record's stable id; empty numbers
	// the records by row.
	ID string `yaml:"id"`
	// Text are the fields whose values, in order, are the record's text.
	Text []string `yaml:"text"`
	// Metadata are the fields kept as the record's metadata.
	Metadata []string `yaml:"metadata"`
	// Required are the fields a record must have, non-blank; a record
	// without one is parked as missing_required_field, alone.
	Required []string `yaml:"required"`
}

// check reports a schema that cannot produce a document.
func (r Records) check() error {
	if len(r.Text) == 0 {
		return errors.New("records: text is empty: name the fields that hold each record's text, such as text: [title, body]")
	}
	return nil
}

// Records returns source's record schema, and whether it has one: a
// source without one reads its record files as text.
func (f Formats) Records(source string) (Records, bool) {
	r, ok := f.records[source]
	return r, ok
}

// SecretsAllow returns the rules whose findings source's documents may
// hold (its secrets_allow); nil allows nothing.
func (f Formats) SecretsAllow(source string) []string { return f.allow[source] }

// For returns the formats a run of source reads; nil reads every format.
func (f Formats) For(source string) []string {
	if l, ok := f.sources[source]; ok {
		return l
	}
	return f.def
}

// LoadFormats reads the formats lists of the policy file at path; an
// empty path has none. check says whether a name is a format the reader
// knows (corpus.CheckFormat), so that a typo is refused with its file and
// line. The rest of the file is decoded as strictly as Load does (an
// unknown key is an error) but not validated: that is the consumer's.
func LoadFormats(path string, check func(string) error) (Formats, error) {
	if path == "" {
		return Formats{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Formats{}, fmt.Errorf("POLICY_FILE: %w", err)
	}
	return ParseFormats(path, data, check)
}

// ParseFormats is LoadFormats on the file's content; name prefixes every
// error with the line it concerns (name:line: ...).
func ParseFormats(name string, data []byte, check func(string) error) (Formats, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return Formats{}, decodeError(name, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // decoded above; this only finds lines
	out := Formats{def: f.Default.Formats, sources: map[string][]string{}, allow: map[string][]string{}, records: map[string]Records{},
		defOCR: f.Default.ocrKeys, ocr: map[string]ocrKeys{}}
	var errs []error
	if err := checkFormats(f.Default.Formats, check); err != nil {
		errs = append(errs, located(name, lineOf(&root, "default", "formats"), "default", err))
	}
	f.Default.ocrKeys.check(func(key string, err error) {
		errs = append(errs, located(name, lineOf(&root, "default", key), "default", err))
	})
	for source, sec := range f.Sources {
		sec.ocrKeys.check(func(key string, err error) {
			errs = append(errs, located(name, lineOf(&root, "sources", source, key), "source "+strconv.Quote(source), err))
		})
		out.ocr[source] = sec.ocrKeys
		if sec.SecretsAllow != nil {
			out.allow[source] = sec.SecretsAllow
		}
		if sec.Records != nil {
			if err := sec.Records.check(); err != nil {
				errs = append(errs, located(name, lineOf(&root, "sources", source, "records"), "source "+strconv.Quote(source), err))
				continue
			}
			out.records[source] = *sec.Records
		}
		if sec.Formats == nil {
			continue
		}
		if err := checkFormats(sec.Formats, check); err != nil {
			errs = append(errs, located(name, lineOf(&root, "sources", source, "formats"), "source "+strconv.Quote(source), err))
			continue
		}
		out.sources[source] = sec.Formats
	}
	if len(errs) > 0 {
		return Formats{}, errors.Join(errs...)
	}
	return out, nil
}

// checkFormats checks a formats list: names, each once, each known to
// check when check is not nil.
func checkFormats(list []string, check func(string) error) error {
	if list != nil && len(list) == 0 {
		return errors.New("formats is empty: list the formats to read, such as [text, markdown, pdf], or leave formats out to read every format")
	}
	var errs []error
	for i, f := range list {
		if slices.Contains(list[:i], f) {
			errs = append(errs, fmt.Errorf("formats: %q is listed twice", f))
			continue
		}
		if check != nil {
			if err := check(f); err != nil {
				errs = append(errs, fmt.Errorf("formats: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
