package corpus

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// RecordSeparator joins a record file's native id and a record's id
// into the record's native id: "tickets.csv#T-1042".
const RecordSeparator = "#"

// readsRecords reports whether a file of format f is read record by
// record when the source has a record schema.
func readsRecords(f extract.Format) bool {
	switch f {
	case extract.FormatCSV, extract.FormatTSV, extract.FormatJSON, extract.FormatJSONL, extract.FormatXLSX, extract.FormatODS:
		return true
	}
	return false
}

// records yields a document per record of the record file at path
// under the source's schema. A record the schema refuses is yielded
// alone as invalid, carrying its row and field; a failure of the file
// as a whole (corrupt, too large, timed out) is the file's document.
func (w *walk) records(path, shown, id string, det extract.Detection) error {
	rx := w.cfg.Extractor.(RecordExtractor) // checked by Config.Validate
	yielded := 0
	err := rx.ExtractRecords(w.ctx, path, det, *w.cfg.Records, func(x *extract.Document, rerr error) error {
		yielded++
		if rerr != nil {
			return w.emit(refusedRecord(id, det, rerr))
		}
		return w.emit(recordDocument(id, det, x))
	})
	if cerr := w.ctx.Err(); cerr != nil {
		return cerr
	}
	var xe *extract.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &xe):
		// The file as a whole failed; the records read before it stand.
		doc := Document{NativeID: id, File: shown, Detected: det, Status: StatusInvalid,
			Metadata: map[string]any{"path": id, "format": string(det.Format)},
			Err:      fmt.Errorf("read records of %s from %s after %d: %w", det.Format, id, yielded, err)}
		return w.emit(doc)
	}
	return err
}

// recordDocument is the document of one record of the file id. It is
// not a whole file: its File is empty.
func recordDocument(id string, det extract.Detection, x *extract.Document) Document {
	meta := map[string]any{"path": id, "format": string(det.Format), "record": x.ID}
	for _, s := range x.Sections {
		if s.Location.Row > 0 {
			meta["row"] = s.Location.Row
		}
		if s.Location.Sheet != "" {
			meta["sheet"] = s.Location.Sheet
		}
	}
	text, _ := joinSections(x.Sections)
	for k, v := range x.Metadata {
		if _, taken := meta[k]; !taken {
			meta[k] = v
		}
	}
	doc := Document{NativeID: id + RecordSeparator + x.ID, Detected: det, Metadata: meta, Size: int64(len(text))}
	return finish(doc, text)
}

// refusedRecord is the invalid document of a record the schema refused:
// its native id names the row, so that it is parked alone.
func refusedRecord(id string, det extract.Detection, err error) Document {
	meta := map[string]any{"path": id, "format": string(det.Format)}
	native := id + RecordSeparator + "row-?"
	var xe *extract.Error
	if errors.As(err, &xe) && xe.Row > 0 {
		meta["row"] = xe.Row
		native = id + RecordSeparator + "row-" + strconv.Itoa(xe.Row)
	}
	return Document{NativeID: native, Detected: det, Metadata: meta, Status: StatusInvalid,
		Err: fmt.Errorf("record of %s: %w", id, err)}
}
