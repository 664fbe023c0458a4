package classify_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/pkg/classify"
)

func TestExtraction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		class  string
		want   classify.Disposition
		reason string
	}{
		{classify.ClassEncrypted, classify.Quarantine, "the bytes stay encrypted; a replay with a password is an operator's call"},
		{classify.ClassCorrupt, classify.Quarantine, "a truncated or malformed file reads the same on every try"},
		{classify.ClassNoTextLayer, classify.Quarantine, "a scan has no text until OCR, whatever the retries"},
		{classify.ClassUnsupportedFormat, classify.Quarantine, "the format does not change between tries"},
		{classify.ClassExtractTimeout, classify.Ambiguous, "slowness may be the machine's load, so a few tries, then park"},
		{classify.ClassExtractMemory, classify.Quarantine, "a zip bomb inflates past the same limit every time"},
		{classify.ClassTooLarge, classify.Quarantine, "the size is in the file"},
		{classify.ClassMissingRequiredField, classify.Quarantine, "the record lacks the field until someone fixes it"},
		{classify.ClassInvalidRecord, classify.Quarantine, "the record is malformed until someone fixes it"},
		{classify.ClassOCRLowConfidence, classify.Quarantine, "a blurry scan reads as blurry on every try; a person keys or accepts it"},
		{classify.ClassToolMissing, classify.Quarantine, "the tool stays missing until someone installs it; then a replay reads the kept bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.class, func(t *testing.T) {
			t.Parallel()
			err := fmt.Errorf("extract report.pdf: %w", classify.Extraction(tt.class, errors.New("cause")))
			got := classify.Classify(err)
			if got.Disposition != tt.want || got.Class != tt.class {
				t.Fatalf("Classify = %+v, want %s %s (%s)", got, tt.want, tt.class, tt.reason)
			}
			if !slices.Contains(classify.ExtractionClasses(), tt.class) {
				t.Errorf("ExtractionClasses() lacks %s", tt.class)
			}
		})
	}
	if n := len(classify.ExtractionClasses()); n != len(tests) {
		t.Errorf("ExtractionClasses() has %d classes, the table %d: give the new class a row", n, len(tests))
	}
}

func TestExtractionUnknownClassIsAmbiguous(t *testing.T) {
	t.Parallel()
	got := classify.Classify(classify.Extraction("made_up", nil))
	if got.Disposition != classify.Ambiguous || got.Class != "made_up" {
		t.Fatalf("Classify = %+v, want ambiguous made_up", got)
	}
}
