package producer_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/policy"
)

// A run over a clean scan and a low-resolution one counts both as read
// by OCR and one as below the bar, in its file counts and in the OCR
// metrics: two pages, their seconds and confidences, one document below
// the bar, by source.
func TestRunCountsWhatOCRDid(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	dir := t.TempDir()
	page := scantest.RenderPage(t, scantest.PagesPDF(), 2)
	scantest.WriteFile(t, dir, "clean.png", scantest.PNG(t, page))
	scantest.WriteFile(t, dir, "lowres.png", scantest.PNG(t, scantest.LowRes(page, 4)))
	tally := &producer.FileTally{}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}, Extractor: corpus.LimitedExtractor{}, OnFile: tally.Observe})
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(producer.Config{SourceID: "permits"}, db.Pool, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p.Files, p.OCRMetrics = tally, producer.NewOCRMetrics(reg)
	sum, err := p.Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if f := sum.Files; f.Read != 1 || f.Parked != 1 || f.OCR != 2 || f.OCRLow != 1 || f.Keyed != 0 {
		t.Errorf("files %+v: want 2 read by OCR, 1 of them parked below the bar", f)
	}
	if n := permits(t, reg, "sluice_ocr_pages_total").GetCounter().GetValue(); n != 2 {
		t.Errorf("pages OCR'd: %v, want 2", n)
	}
	if s := permits(t, reg, "sluice_ocr_seconds_total").GetCounter().GetValue(); s <= 0 {
		t.Errorf("OCR seconds: %v, want the time the two pages took", s)
	}
	if n := permits(t, reg, "sluice_ocr_low_confidence_documents_total").GetCounter().GetValue(); n != 1 {
		t.Errorf("documents below the bar: %v, want 1", n)
	}
	h := permits(t, reg, "sluice_ocr_page_confidence").GetHistogram()
	if h.GetSampleCount() != 2 || below(h, 0.8) != 1 {
		t.Errorf("confidence histogram: %d pages, %d at or below 0.8; want 2 pages, the low one below", h.GetSampleCount(), below(h, 0.8))
	}
}

// permits returns the permits source's series of the metric name, or
// an empty one.
func permits(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(families, func(f *dto.MetricFamily) bool { return f.GetName() == name })
	if i < 0 {
		return &dto.Metric{}
	}
	for _, m := range families[i].GetMetric() {
		if slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "source" && l.GetValue() == "permits" }) {
			return m
		}
	}
	return &dto.Metric{}
}

// below is how many of h's observations are at or below le.
func below(h *dto.Histogram, le float64) uint64 {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	return 0
}

// A source whose ocr_languages names one Tesseract does not have is
// refused at start, naming the package that installs it; the installed
// default is accepted.
func TestCheckOCRRefusesALanguageNotInstalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if err := producer.CheckOCR(ctx, producer.OCRSettings(policy.OCR{}), zerolog.Nop()); err != nil {
		t.Fatalf("the default language: %v", err)
	}
	err := producer.CheckOCR(ctx, producer.OCRSettings(policy.OCR{Languages: []string{"eng", "tlh_piqad"}}), zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "tesseract-ocr-tlh-piqad") || !strings.Contains(err.Error(), "ocr_languages") {
		t.Errorf("a language not installed: %v; want an error naming ocr_languages and tesseract-ocr-tlh-piqad", err)
	}
	if err := producer.CheckOCR(ctx, producer.OCRSettings(policy.OCR{Scope: "pages"}), zerolog.Nop()); err == nil {
		t.Error("an unknown scope is accepted")
	}
}
