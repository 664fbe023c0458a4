package corpus

import (
	"context"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// Extractor turns a file of a document format (PDF, Office, OpenDocument,
// EPUB, gzip: the formats extract.Detect calls extractable) into text. It
// is the hook through which the reader reads more than text: with none
// configured, such files are parked as unsupported_format ("no extractor
// for application/pdf configured"). LimitedExtractor is the one the
// producer uses.
type Extractor interface {
	// Extract returns the text of the file at path, whose format Detect
	// found to be d, as sections located by page (or slide) where the
	// format has pages; the reader joins them with blank lines and
	// normalises them as any decoded text. An error is the file's, not
	// the run's: the file is parked, in the class a *classify.Error in
	// the error's chain names (an *extract.Error carries one), else
	// invalid_message; extract.ErrToolMissing, a fault of the deployment,
	// as extract_tool_missing. Extract must honour ctx.
	Extract(ctx context.Context, path string, d extract.Detection) (*extract.Document, error)
}

// RecordExtractor reads a record file (CSV, TSV, JSON, JSONL, XLSX, ODS)
// record by record under a schema, calling fn for each record in order
// as extract.ExtractRecords does. LimitedExtractor is one.
type RecordExtractor interface {
	ExtractRecords(ctx context.Context, path string, d extract.Detection, schema extract.RecordSchema, fn extract.RecordFunc) error
}
