package policy

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of a source's OCR settings, which extraction applies to a
// zero field: the same values as extract's, restated here because this
// package sits below it.
const (
	// DefaultOCRMinConfidence is the bar a scan's confidence is held to.
	DefaultOCRMinConfidence = 0.80
	// DefaultOCRScope holds the document's word-weighted confidence to
	// the bar.
	DefaultOCRScope = OCRScopeDocument
	// DefaultOCRLanguage is the Tesseract language of a scan.
	DefaultOCRLanguage = "eng"
)

// Values of ocr_scope.
const (
	// OCRScopeDocument holds the document's word-weighted confidence to
	// the bar: one smudged page of a long, clean scan does not park it.
	OCRScopeDocument = "document"
	// OCRScopePage holds every page to the bar: a contract whose signature
	// page is unreadable waits for a person, however clean the rest.
	OCRScopePage = "page"
)

// OCR is a source's OCR settings (ocr_min_confidence, ocr_scope,
// ocr_languages), every value concrete.
type OCR struct {
	// MinConfidence is the bar, from 0 to 1, below which a scan is parked
	// as ocr_low_confidence. Defaults to DefaultOCRMinConfidence (0.80).
	MinConfidence float64
	// Scope is OCRScopeDocument or OCRScopePage. Defaults to
	// DefaultOCRScope (document).
	Scope string
	// Languages are the Tesseract languages of the source's scans, each
	// of which must be installed. Defaults to [DefaultOCRLanguage] (eng).
	Languages []string
}

// ocrKeys are a section's OCR keys as the file writes them.
type ocrKeys struct {
	MinConfidence *float64 `yaml:"ocr_min_confidence"`
	Scope         *string  `yaml:"ocr_scope"`
	Languages     []string `yaml:"ocr_languages"`
}

// apply overlays the keys k sets on base.
func (k ocrKeys) apply(base OCR) OCR {
	set(&base.MinConfidence, k.MinConfidence)
	set(&base.Scope, k.Scope)
	if k.Languages != nil {
		base.Languages = k.Languages
	}
	return base
}

// check reports each key whose value has no meaning, saying how to fix
// it, through report with the key's name. Whether a language is
// installed is the producer's question, at start.
func (k ocrKeys) check(report func(key string, err error)) {
	if c := k.MinConfidence; c != nil && (math.IsNaN(*c) || *c <= 0 || *c > 1) {
		report("ocr_min_confidence", fmt.Errorf("ocr_min_confidence %g: use a fraction above 0 and at most 1, such as %g", *c, DefaultOCRMinConfidence))
	}
	if s := k.Scope; s != nil && *s != OCRScopeDocument && *s != OCRScopePage {
		report("ocr_scope", fmt.Errorf("ocr_scope %q: use %s (the document's word-weighted confidence) or %s (every page's)", *s, OCRScopeDocument, OCRScopePage))
	}
	if k.Languages != nil && len(k.Languages) == 0 {
		report("ocr_languages", errors.New("ocr_languages is empty: list Tesseract languages such as [eng, deu], or leave it out for eng"))
	}
}

// OCR returns source's OCR settings: its section's keys over the
// default section's over the defaults.
func (f Formats) OCR(source string) OCR {
	o := OCR{MinConfidence: DefaultOCRMinConfidence, Scope: DefaultOCRScope, Languages: []string{DefaultOCRLanguage}}
	o = f.defOCR.apply(o)
	if k, ok := f.ocr[source]; ok {
		o = k.apply(o)
	}
	return o
}
