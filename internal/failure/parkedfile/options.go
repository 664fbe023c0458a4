package parkedfile

import (
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/ingest/producer"
)

// Options are the settings of a parked file's replay: the source's, as
// the producer reads it, and what the operator changed to fix the cause.
type Options struct {
	// Producer is the source's producer settings: chunking, the secret
	// screen, the cap on kept bytes. SourceID, RunID and Reread are set
	// by the replay. Defaults to the producer's defaults.
	Producer producer.Config
	// Formats narrows the formats read, as the source's policy does
	// (corpus.Config.Formats). Defaults to every format.
	Formats []string
	// MaxDocumentBytes is the largest text file read whole
	// (corpus.Config.MaxDocumentBytes). Defaults to corpus's default.
	MaxDocumentBytes int64
	// Extract bounds the extraction, as the producer's --extract-*
	// settings do; raise one to replay a file parked as too_large.
	// Defaults to extract's defaults.
	Extract extract.Limits
	// Password opens an encrypted PDF. Defaults to none.
	Password string
	// OCR is how scans are read: the source's bar, scope and languages
	// as its policy now says (a lowered bar re-reads a parked scan), and
	// Accept to store a scan below the bar, an operator's decision that
	// it is good enough. Defaults to extract's defaults.
	OCR extract.OCR
	// Extractor builds the extractor from these options, so that a
	// setting that changes how text is extracted can plug in. Defaults
	// to corpus.LimitedExtractor with Extract, Password and OCR.
	Extractor func(Options) corpus.Extractor
	// Text, when not nil, is keyed text: an operator's transcription,
	// stored as the document instead of what the bytes hold. Defaults to
	// nil.
	Text *string
	// By names who asked, Reason why; Reason is required to execute.
	By, Reason string
}

func (o Options) extractor() corpus.Extractor {
	if o.Extractor != nil {
		return o.Extractor(o)
	}
	return corpus.LimitedExtractor{Limits: o.Extract, Password: o.Password, OCR: o.OCR}
}
