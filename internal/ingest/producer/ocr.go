package producer

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/pkg/classify"
)

// OCRSettings is how extraction reads a source's scans, from its policy
// (ocr_min_confidence, ocr_scope, ocr_languages).
func OCRSettings(o policy.OCR) extract.OCR {
	return extract.OCR{Languages: o.Languages, MinConfidence: o.MinConfidence, Scope: extract.Scope(o.Scope)}
}

// CheckOCR reports, as a usage error naming the package to install, an
// OCR language of o that Tesseract does not have: a source that names
// one would park every scan, so the command refuses to start. Tesseract
// itself missing is only logged: the run reads everything else and
// parks each scan as extract_tool_missing, its bytes kept for a replay
// once tesseract-ocr is installed.
func CheckOCR(ctx context.Context, o extract.OCR, log zerolog.Logger) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if _, err := exec.LookPath("tesseract"); err != nil {
		log.Warn().Msg("tesseract is not installed: scans and images will be parked as extract_tool_missing; install tesseract-ocr (make extract-tools), then replay them")
		return nil
	}
	if err := extract.CheckLanguages(ctx, o.Languages); err != nil {
		return fmt.Errorf("policy ocr_languages: %w", err)
	}
	return nil
}

// fileOutcome is what became of one whole-file document of a batch: the
// class it is parked in ("" when read), the pages OCR read of it, and
// whether its text was keyed by a person.
type fileOutcome struct {
	class string
	ocr   []extract.PageOCR
	keyed bool
}

// outcomeOf is the outcome of d, parked in class ("" when read).
func outcomeOf(d corpus.Document, class string) fileOutcome {
	return fileOutcome{class: class, ocr: d.OCR, keyed: d.Metadata["origin"] == KeyedOrigin}
}

// KeyedOrigin is the "origin" metadata of a document whose text a
// person keyed in for a parked file (sluice dlq correct --text).
const KeyedOrigin = "keyed_text"

// OCRMetrics counts what OCR did in the producer's runs, by source, once
// each batch is recorded. Keyed documents are stored by the CLI's
// corrections, which export nothing: their runs record them
// (runs.Files.Keyed).
type OCRMetrics struct {
	// Pages counts the pages OCR read (sluice_ocr_pages_total).
	Pages *prometheus.CounterVec
	// Seconds counts the time spent rendering and recognising them
	// (sluice_ocr_seconds_total).
	Seconds *prometheus.CounterVec
	// Confidence is the distribution of the pages' confidences
	// (sluice_ocr_page_confidence).
	Confidence *prometheus.HistogramVec
	// Low counts the documents parked below their source's bar
	// (sluice_ocr_low_confidence_documents_total).
	Low *prometheus.CounterVec
}

// NewOCRMetrics registers the OCR metrics on reg.
func NewOCRMetrics(reg prometheus.Registerer) *OCRMetrics {
	source := []string{"source"}
	m := &OCRMetrics{
		Pages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ocr_pages_total",
			Help: "Pages of scans and images read by OCR, by source."}, source),
		Seconds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ocr_seconds_total",
			Help: "Seconds spent rendering and recognising pages by OCR, by source."}, source),
		Confidence: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_ocr_page_confidence",
			Help:    "OCR confidence of each page read (0 to 1, word-weighted), by source.",
			Buckets: []float64{0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1}}, source),
		Low: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ocr_low_confidence_documents_total",
			Help: "Documents parked as ocr_low_confidence, below their source's bar, by source."}, source),
	}
	reg.MustRegister(m.Pages, m.Seconds, m.Confidence, m.Low)
	return m
}

// observe counts one recorded file of source; a nil m counts nothing.
func (m *OCRMetrics) observe(source string, f fileOutcome) {
	if m == nil {
		return
	}
	for _, p := range f.ocr {
		m.Pages.WithLabelValues(source).Inc()
		m.Seconds.WithLabelValues(source).Add(p.Duration.Seconds())
		m.Confidence.WithLabelValues(source).Observe(p.Confidence)
	}
	if f.class == classify.ClassOCRLowConfidence {
		m.Low.WithLabelValues(source).Inc()
	}
}
