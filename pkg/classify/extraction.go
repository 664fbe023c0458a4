package classify

// Classes of the failures of extracting text from a document file (PDF,
// Office, OpenDocument, EPUB, gzip, record files). ClassTooLarge, shared
// with other size limits, is one of them too.
const (
	// ClassEncrypted: the file needs a password to be read.
	ClassEncrypted = "encrypted"
	// ClassCorrupt: the file is truncated or malformed beyond what its
	// reader recovers from.
	ClassCorrupt = "corrupt"
	// ClassNoTextLayer: a PDF whose pages have (almost) no text: a scan,
	// which needs OCR.
	ClassNoTextLayer = "no_text_layer"
	// ClassUnsupportedFormat: content of no format Sluice reads (archives,
	// legacy Office, executables), or a document
	// format no extractor is configured for.
	ClassUnsupportedFormat = "unsupported_format"
	// ClassExtractTimeout: extraction ran past its time limit.
	ClassExtractTimeout = "extract_timeout"
	// ClassExtractMemory: extraction would inflate or allocate past its
	// limits (a zip bomb, a PDF tool out of memory).
	ClassExtractMemory = "extract_memory"
	// ClassMissingRequiredField: a record lacks a field its schema requires.
	ClassMissingRequiredField = "missing_required_field"
	// ClassInvalidRecord: a record is not what its format requires (a CSV
	// row of the wrong width, a JSON record that is not an object).
	ClassInvalidRecord = "invalid_record"
	// ClassOCRLowConfidence: a scanned document or image whose OCR
	// confidence is below its source's bar (the document's, or a page's):
	// it waits for a person to key its text, accept it as it is, or
	// change the bar.
	ClassOCRLowConfidence = "ocr_low_confidence"
	// ClassToolMissing: a tool the file's extraction needs (pdftotext,
	// pdftoppm, tesseract) or an OCR language is not installed. The
	// deployment's fault, not the file's: the file is parked with its
	// bytes kept, and replayed once the tool is installed.
	ClassToolMissing = "extract_tool_missing"
)

// extractionDispositions gives each extraction class its disposition.
// Quarantine for every class whose cause is in the file's bytes, which a
// retry reads again unchanged; a replay after a fix (a password, OCR, a
// corrected record, a higher limit, keyed text for a poor scan, a tool
// installed) is an operator's decision.
// extract_timeout is Ambiguous: a slow extraction may be the file's doing
// (a pathological PDF) or the machine's (load from other work), so it gets
// the bounded ambiguous budget before it is parked.
var extractionDispositions = map[string]Disposition{
	ClassEncrypted:            Quarantine,
	ClassCorrupt:              Quarantine,
	ClassNoTextLayer:          Quarantine,
	ClassUnsupportedFormat:    Quarantine,
	ClassExtractTimeout:       Ambiguous,
	ClassExtractMemory:        Quarantine,
	ClassTooLarge:             Quarantine,
	ClassMissingRequiredField: Quarantine,
	ClassInvalidRecord:        Quarantine,
	ClassOCRLowConfidence:     Quarantine,
	ClassToolMissing:          Quarantine,
}

// ExtractionClasses returns the classes an extraction can fail with.
func ExtractionClasses() []string {
	return []string{
		ClassEncrypted, ClassCorrupt, ClassNoTextLayer, ClassUnsupportedFormat,
		ClassExtractTimeout, ClassExtractMemory, ClassTooLarge,
		ClassMissingRequiredField, ClassInvalidRecord, ClassOCRLowConfidence,
		ClassToolMissing,
	}
}

// Extraction marks err as an extraction failure of the given class, with
// the class's disposition; a class that is not an extraction class is
// Ambiguous.
func Extraction(class string, err error) error {
	d, ok := extractionDispositions[class]
	if !ok {
		d = Ambiguous
	}
	return &Error{Disposition: d, Class: class, Err: err}
}
