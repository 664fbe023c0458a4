package producer

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/platform/policy"
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
