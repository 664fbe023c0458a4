package extract

import "strings"

// Document is the text extracted from one file, or from one record of a
// record file.
type Document struct {
	// Format is the format the text was extracted from; for a gzip stream,
	// the format of its content.
	Format Format
	// Title is the document's own title where the format has one (PDF and
	// Office metadata, ODF and EPUB dc:title, HTML <title>); empty if none.
	Title string
	// ID is a record's identifier, the value of RecordSchema.IDColumn;
	// empty for a whole file.
	ID string
	// Metadata holds a record's RecordSchema.MetadataColumns that have a
	// value; nil for a whole file.
	Metadata map[string]string
	// Sections is the text in reading order, each part with where it was
	// found.
	Sections []Section
	// OCR lists the pages whose text was recognised by OCR, in order, with
	// their confidence; nil when none was.
	OCR []PageOCR
	// OCRAccepted is true for a scan below its bar whose text was kept
	// because OCR.Accept said so: an operator's decision, which the
	// document's metadata records.
	OCRAccepted bool
}

// Section is a run of text and where in the file it was found.
type Section struct {
	// Text is normalised text: "\n" line endings, Unicode NFC, paragraphs
	// separated by a blank line.
	Text string
	// Location is where the text was found; zero for flowing text.
	Location Location
}

// Location is where a section was found in its file. Its fields are zero
// when the format has no such notion.
type Location struct {
	// Page is the 1-based page of a PDF or slide of a PPTX or ODP.
	Page int
	// Sheet is the name of a spreadsheet's sheet.
	Sheet string
	// Row is the 1-based row of a spreadsheet's sheet, or of a record file
	// (its line for CSV, TSV and JSONL, its position for JSON and XML).
	Row int
}

// Text returns the sections' text joined by blank lines.
func (d *Document) Text() string {
	parts := make([]string, 0, len(d.Sections))
	for _, s := range d.Sections {
		if s.Text != "" {
			parts = append(parts, s.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}
