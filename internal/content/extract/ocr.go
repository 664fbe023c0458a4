package extract

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// DefaultMinConfidence is the OCR confidence below which a scan waits for
// a person: the bar document-processing guides suggest for text that is
// read back, not only searched.
const DefaultMinConfidence = 0.80

// DefaultOCRLanguage is the Tesseract language used when none is set.
const DefaultOCRLanguage = "eng"

// Scope says which confidence is held to OCR.MinConfidence.
type Scope string

const (
	// ScopeDocument holds the document's word-weighted confidence to the
	// bar: one smudged page of a long, clean scan does not stop it.
	ScopeDocument Scope = "document"
	// ScopePage holds every page's confidence to the bar: a contract
	// whose signature page is unreadable waits for a person, however clean
	// the rest.
	ScopePage Scope = "page"
)

// OCR is how scanned PDF pages and images are read with Tesseract.
type OCR struct {
	// Languages are the Tesseract languages the text is in, such as
	// ["eng", "deu"]; each must be installed (tesseract --list-langs).
	// Defaults to ["eng"].
	Languages []string
	// MinConfidence is the bar, from 0 to 1, below which the extraction
	// fails with ocr_low_confidence. Defaults to DefaultMinConfidence
	// (0.80).
	MinConfidence float64
	// Scope says which confidence is held to MinConfidence. Defaults to
	// ScopeDocument.
	Scope Scope
	// Accept keeps the text however low its confidence: an operator's
	// decision that a scan is good enough, made for one document on
	// replay. Defaults to false.
	Accept bool
}

// withDefaults returns o with every zero field set to its default.
func (o OCR) withDefaults() OCR {
	if len(o.Languages) == 0 {
		o.Languages = []string{DefaultOCRLanguage}
	}
	if o.MinConfidence == 0 {
		o.MinConfidence = DefaultMinConfidence
	}
	if o.Scope == "" {
		o.Scope = ScopeDocument
	}
	return o
}

// Validate reports a setting that has no meaning, saying how to fix it.
// Whether the languages are installed is CheckLanguages's question.
func (o OCR) Validate() error {
	var errs []error
	if math.IsNaN(o.MinConfidence) || o.MinConfidence < 0 || o.MinConfidence > 1 {
		errs = append(errs, fmt.Errorf("ocr min confidence %v is not between 0 and 1: set a fraction such as %v, or 0 for the default", o.MinConfidence, DefaultMinConfidence))
	}
	switch o.Scope {
	case "", ScopeDocument, ScopePage:
	default:
		errs = append(errs, fmt.Errorf("ocr scope %q is neither %q nor %q: use document to hold the whole scan to the bar, page to hold every page", o.Scope, ScopeDocument, ScopePage))
	}
	for _, l := range o.Languages {
		if !validLanguage(l) {
			errs = append(errs, fmt.Errorf("ocr language %q is not a Tesseract language name: use names such as eng, deu or chi_sim, as tesseract --list-langs prints them", l))
		}
	}
	return errors.Join(errs...)
}

// validLanguage reports whether l looks like a Tesseract language name,
// which becomes one argument of -l.
func validLanguage(l string) bool {
	if l == "" || len(l) > 32 {
		return false
	}
	for _, c := range l {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// languageArg is the value of tesseract's -l.
func (o OCR) languageArg() string { return strings.Join(o.Languages, "+") }

// PageOCR is what OCR made of one page of a scan.
type PageOCR struct {
	// Page is the 1-based page of the PDF or image.
	Page int
	// Words is how many words Tesseract recognised.
	Words int
	// Confidence is the word-weighted mean of the words' confidences,
	// from 0 to 1; 0 for a page without words.
	Confidence float64
	// Duration is how long rendering and recognising the page took.
	Duration time.Duration
}

// DocumentConfidence is the word-weighted confidence of pages: each
// page's confidence weighted by its words. It is 0 when no page has words.
func DocumentConfidence(pages []PageOCR) float64 {
	var sum float64
	words := 0
	for _, p := range pages {
		sum += p.Confidence * float64(p.Words)
		words += p.Words
	}
	if words == 0 {
		return 0
	}
	return sum / float64(words)
}

// lowPages returns the pages whose confidence is below the bar under
// scope: for ScopePage each page with words below it, for
// ScopeDocument every page with words when the document's confidence is
// below it; nil when the scan clears the bar.
func lowPages(pages []PageOCR, bar float64, scope Scope) []PageOCR {
	var low []PageOCR
	for _, p := range pages {
		if p.Words > 0 && (scope == ScopeDocument || p.Confidence < bar) {
			low = append(low, p)
		}
	}
	if scope == ScopeDocument && (len(low) == 0 || DocumentConfidence(pages) >= bar) {
		return nil
	}
	return low
}

// judge fails a scan whose confidence is below the bar with
// ocr_low_confidence, naming its pages and their scores, unless o
// accepts it.
func (o OCR) judge(pages []PageOCR) error {
	low := lowPages(pages, o.MinConfidence, o.Scope)
	if low == nil || o.Accept {
		return nil
	}
	scores := make([]string, len(low))
	for i, p := range low {
		scores[i] = strconv.Itoa(p.Page) + " (" + strconv.FormatFloat(p.Confidence, 'f', 2, 64) + ")"
	}
	what := fmt.Sprintf("document confidence %.2f", DocumentConfidence(pages))
	if o.Scope == ScopePage {
		what = fmt.Sprintf("%d of %d pages", len(low), len(pages))
	}
	e := failf(classify.ClassOCRLowConfidence, "%s below the bar of %.2f (scope %s): pages %s: key its text, accept it, or change the source's bar and replay",
		what, o.MinConfidence, o.Scope, strings.Join(scores, ", "))
	e.OCR, e.Scanned = slices.Clone(low), slices.Clone(pages)
	return e
}
