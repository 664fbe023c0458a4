package corpus

import (
	"context"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// Extractor turns a file of a document format (PDF, Office, OpenDocument,
// EPUB, gzip: the formats extract.Detect calls extractable) into text. It
// is the hook through which the reader reads more than text: with none
// configured, such files are parked as unsupported_format ("no extractor
// for application/pdf configured").
type Extractor interface {
	// Extract returns the text of the file at path, whose format Detect
	// found to be d. The text is normalised as any decoded text is. An
	// error is the file's, not the run's: the file is parked, in the
	// class a *classify.Error in the error's chain names
	// (unsupported_format for a variant it cannot read, too_large for a
	// bomb), else invalid_message. Extract must honour ctx.
	Extract(ctx context.Context, path string, d extract.Detection) (string, error)
}
