package extract_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/pkg/classify"
)

func TestOCRScans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p1 := scantest.RenderPage(t, "testdata/pages.pdf", 1)
	p2 := scantest.RenderPage(t, "testdata/pages.pdf", 2)
	p3 := scantest.RenderPage(t, "testdata/pages.pdf", 3)
	clean := scantest.StackPages(p1, p2, p3)
	cleanPNG := scantest.WriteFile(t, dir, "clean.png", scantest.PNG(t, clean))
	lowPNG := scantest.WriteFile(t, dir, "low.png", scantest.PNG(t, scantest.LowRes(p3, 6)))
	scanPDF := scantest.WriteFile(t, dir, "scan.pdf", scantest.ImagePDF(t, clean))
	mixed := scantest.MergePDFs(t, dir, "mixed.pdf", "testdata/pages.pdf", "1", scantest.WriteFile(t, dir, "two.pdf", scantest.ImagePDF(t, clean, scantest.LowRes(p3, 6))), "1-2")
	run := func(path string, format extract.Format, o extract.OCR) (*extract.Document, error) {
		return extract.ExtractWith(context.Background(), extract.Source{Name: path, Path: path}, format, extract.Config{OCR: o})
	}
	t.Run("clean image", func(t *testing.T) {
		t.Parallel()
		doc, err := run(cleanPNG, extract.FormatPNG, extract.OCR{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(doc.Text(), scantest.Sentence2) || len(doc.OCR) != 1 || doc.OCR[0].Confidence < 0.8 {
			t.Fatalf("text %q, OCR %+v: want %q at confidence ≥ 0.8", doc.Text(), doc.OCR, scantest.Sentence2)
		}
	})
	t.Run("image-only PDF", func(t *testing.T) {
		t.Parallel()
		doc, err := run(scanPDF, extract.FormatPDF, extract.OCR{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(doc.Text(), scantest.Sentence1) || doc.Sections[0].Location.Page != 1 || extract.DocumentConfidence(doc.OCR) < 0.8 {
			t.Fatalf("sections %+v, OCR %+v", doc.Sections, doc.OCR)
		}
	})
	t.Run("low resolution is parked with its page", func(t *testing.T) {
		t.Parallel()
		_, err := run(lowPNG, extract.FormatPNG, extract.OCR{})
		e := wantClass(t, err, classify.ClassOCRLowConfidence)
		if len(e.OCR) != 1 || e.OCR[0].Page != 1 || e.OCR[0].Confidence >= 0.8 {
			t.Fatalf("pages %+v, want page 1 below 0.8", e.OCR)
		}
		if len(e.Recognised) != 1 || e.Recognised[0].Location.Page != 1 || len(strings.Fields(e.Recognised[0].Text)) < 5 {
			t.Errorf("recognised %+v, want page 1's words, for the person who keys it", e.Recognised)
		}
	})
	t.Run("accept keeps low-confidence text", func(t *testing.T) {
		t.Parallel()
		doc, err := run(lowPNG, extract.FormatPNG, extract.OCR{Accept: true})
		if err != nil || doc.Text() == "" || doc.OCR[0].Confidence >= 0.8 {
			t.Fatalf("doc %+v, err %v: want the text stored with its low score", doc, err)
		}
	})
	t.Run("mixed PDF by document", func(t *testing.T) {
		t.Parallel()
		doc, err := run(mixed, extract.FormatPDF, extract.OCR{Scope: extract.ScopeDocument})
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.OCR) != 2 || doc.OCR[0].Page != 2 || doc.OCR[1].Page != 3 {
			t.Fatalf("OCR %+v: want only pages 2 and 3 read by OCR", doc.OCR)
		}
		if !strings.Contains(doc.Sections[0].Text, scantest.Sentence1) || doc.Sections[0].Location.Page != 1 {
			t.Fatalf("page 1 = %+v, want its text layer", doc.Sections[0])
		}
	})
	t.Run("mixed PDF by page", func(t *testing.T) {
		t.Parallel()
		_, err := run(mixed, extract.FormatPDF, extract.OCR{Scope: extract.ScopePage})
		e := wantClass(t, err, classify.ClassOCRLowConfidence)
		if len(e.OCR) != 1 || e.OCR[0].Page != 3 {
			t.Fatalf("pages %+v, want page 3 alone below the bar", e.OCR)
		}
	})
}

func TestTIFFBombIsTooLarge(t *testing.T) {
	t.Parallel()
	for _, pages := range []int{1, 3} {
		bomb := scantest.TIFFBomb(pages, 1<<20, 1<<20)
		if d := extract.Detect("bomb.tif", bomb); d.Format != extract.FormatTIFF {
			t.Fatalf("Detect = %+v", d)
		}
		_, err := extract.Extract(context.Background(), extract.Source{Name: "bomb.tif", Data: bomb}, extract.FormatTIFF, extract.Limits{})
		wantClass(t, err, classify.ClassTooLarge)
	}
}

func TestLowPagesByScope(t *testing.T) {
	t.Parallel()
	pages := []extract.PageOCR{{Page: 1, Words: 40, Confidence: 0.96}, {Page: 2, Words: 10, Confidence: 0.4}, {Page: 3}}
	if c := extract.DocumentConfidence(pages); c < 0.84 || c > 0.85 {
		t.Fatalf("DocumentConfidence = %v, want the word-weighted 0.848", c)
	}
}
