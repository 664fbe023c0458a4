package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
)

// RecordSchema says how the rows of a record file become documents.
type RecordSchema struct {
	// IDColumn is the field whose value is each record's Document.ID;
	// empty makes the ID the record's row number.
	IDColumn string
	// TextColumns are the fields whose values, in this order and
	// separated by blank lines, are the record's text. At least one.
	TextColumns []string
	// MetadataColumns are the fields kept in Document.Metadata.
	MetadataColumns []string
	// Required are the fields a record must have, non-blank; a record
	// without one is a missing_required_field error naming it.
	Required []string
}

// Validate reports a schema that cannot produce a document.
func (s RecordSchema) Validate() error {
	if len(s.TextColumns) == 0 {
		return errors.New("record schema: no text columns: name the fields that hold each record's text")
	}
	return nil
}

// RecordFunc receives each record of a record file in order: a document,
// or the record's own failure (an *Error of class missing_required_field
// or invalid_record carrying its Row and Field). Returning an error stops
// the reading and is returned by ExtractRecords.
type RecordFunc func(doc *Document, err error) error

// ExtractRecords reads a CSV, TSV, JSONL, JSON (an array of objects), XLSX
// or ODS file as records under schema, one Document per record, calling fn
// for each in order. A bad record does not stop the file: fn receives its
// error and the next record follows. The first row of a CSV, TSV or sheet
// names the fields; every sheet of a workbook is read, its rows located
// by sheet and row. ExtractRecords returns the failures of the file as a
// whole (corrupt, too_large, extract_memory, extract_timeout,
// unsupported_format for a format without records) and whatever fn returns.
func ExtractRecords(ctx context.Context, src Source, format Format, schema RecordSchema, lim Limits, fn RecordFunc) error {
	if err := schema.Validate(); err != nil {
		return err
	}
	if err := lim.Validate(); err != nil {
		return err
	}
	lim = lim.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, lim.Timeout, errTimedOut)
	defer cancel()
	emit := func(r record) error {
		if err := ctx.Err(); err != nil {
			if context.Cause(ctx) == errTimedOut {
				return wrapf(classify.ClassExtractTimeout, errTimedOut, "after %v", lim.Timeout)
			}
			return err
		}
		doc, err := schema.document(r, format)
		if err != nil {
			return fn(nil, err)
		}
		return fn(doc, nil)
	}
	switch format {
	case FormatCSV, FormatTSV, FormatJSONL, FormatJSON:
		raw, err := src.readAll(lim.MaxBytes)
		if err != nil {
			return err
		}
		text, err := decodeText(raw)
		if err != nil {
			return &Error{Class: classify.ClassUnsupportedFormat, Detail: "the content is not text", Err: err}
		}
		switch format {
		case FormatCSV, FormatTSV:
			return csvRecords(text, format, emit)
		case FormatJSONL:
			return jsonlRecords(text, emit)
		}
		return jsonRecords(text, emit)
	case FormatXLSX, FormatODS:
		f, err := src.open(lim.MaxBytes)
		if err != nil {
			return err
		}
		defer f.close()
		a, err := openArchive(f, lim)
		if err != nil {
			return err
		}
		return sheetRecords(a, format, emit)
	}
	return failf(classify.ClassUnsupportedFormat, "%s files hold no records: read them with Extract", format)
}

// record is one record's fields before the schema picks from them.
type record struct {
	fields  map[string]string
	row     int
	sheet   string
	invalid string
}

// document applies the schema to one record.
func (s RecordSchema) document(r record, format Format) (*Document, error) {
	if r.invalid != "" {
		return nil, &Error{Class: classify.ClassInvalidRecord, Row: r.row, Detail: r.invalid}
	}
	for _, f := range s.Required {
		if strings.TrimSpace(r.fields[f]) == "" {
			return nil, &Error{Class: classify.ClassMissingRequiredField, Row: r.row, Field: f, Detail: "the schema requires it"}
		}
	}
	doc := &Document{Format: format, ID: fmt.Sprint(r.row)}
	if s.IDColumn != "" {
		doc.ID = strings.TrimSpace(r.fields[s.IDColumn])
		if doc.ID == "" {
			return nil, &Error{Class: classify.ClassMissingRequiredField, Row: r.row, Field: s.IDColumn, Detail: "the id column is empty"}
		}
	}
	var parts []string
	for _, c := range s.TextColumns {
		if v := strings.TrimSpace(r.fields[c]); v != "" {
			parts = append(parts, v)
		}
	}
	doc.Sections = []Section{{Text: normalize(strings.Join(parts, "\n\n")), Location: Location{Sheet: r.sheet, Row: r.row}}}
	for _, c := range s.MetadataColumns {
		if v, ok := r.fields[c]; ok && v != "" {
			if doc.Metadata == nil {
				doc.Metadata = map[string]string{}
			}
			doc.Metadata[c] = v
		}
	}
	return doc, nil
}

// csvRecords reads a header row, then a record per row, numbered as lines
// of the file (the header is row 1).
func csvRecords(text string, format Format, emit func(record) error) error {
	cr := csv.NewReader(strings.NewReader(text))
	if format == FormatTSV {
		cr.Comma = '\t'
		cr.LazyQuotes = true
	}
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil
		}
		return wrapf(classify.ClassCorrupt, err, "read the header row")
	}
	for {
		cells, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return wrapf(classify.ClassCorrupt, err, "read a row")
			}
			if err := emit(record{row: pe.StartLine, invalid: pe.Err.Error()}); err != nil {
				return err
			}
			continue
		}
		r := record{row: line}
		if len(cells) != len(header) {
			r.invalid = fmt.Sprintf("%d fields, the header has %d", len(cells), len(header))
		}
		r.fields = zipFields(header, cells)
		if err := emit(r); err != nil {
			return err
		}
	}
}

func zipFields(header, cells []string) map[string]string {
	m := make(map[string]string, len(header))
	for i, h := range header {
		if i < len(cells) {
			m[strings.TrimSpace(h)] = cells[i]
		}
	}
	return m
}

// jsonlRecords reads an object per non-blank line, numbered by line.
func jsonlRecords(text string, emit func(record) error) error {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, len(text)+1)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := emit(objectRecord(json.RawMessage(sc.Bytes()), line)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// jsonRecords reads an array of objects, numbered by position from 1.
func jsonRecords(text string, emit func(record) error) error {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(text), &items); err != nil {
		return wrapf(classify.ClassCorrupt, err, "a JSON record file is an array of objects")
	}
	for i, item := range items {
		if err := emit(objectRecord(item, i+1)); err != nil {
			return err
		}
	}
	return nil
}

// objectRecord turns a JSON object into fields: strings as they are,
// other values as their JSON text.
func objectRecord(raw json.RawMessage, row int) record {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return record{row: row, invalid: "not a JSON object"}
	}
	fields := make(map[string]string, len(obj))
	for k, v := range obj {
		var s string
		if json.Unmarshal(v, &s) == nil {
			fields[k] = s
		} else if string(v) != "null" {
			fields[k] = string(v)
		}
	}
	return record{row: row, fields: fields}
}

// sheetRecords reads each sheet's first non-empty row as its header and
// the rows after it as records.
func sheetRecords(a *archive, format Format, emit func(record) error) error {
	headers := map[string][]string{}
	return sheetRows(a, format, func(sheet string, row int, cells []string) error {
		header, ok := headers[sheet]
		if !ok {
			headers[sheet] = append([]string(nil), cells...)
			return nil
		}
		return emit(record{fields: zipFields(header, cells), row: row, sheet: sheet})
	})
}
