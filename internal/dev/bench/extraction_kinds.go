package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/extract/scantest"
)

// pdfCopies is how many copies of the test corpus's three-page text PDF
// a generated PDF joins, and ocrLines how many lines of text a
// generated scanned page holds: a page of a typed letter.
const (
	pdfCopies = 20
	ocrLines  = 21
)

// pdfKind reads text PDFs of 60 pages through poppler, as the extractor
// does; its baseline calls the extractor file after file.
func pdfKind() extractKind {
	return extractKind{name: "pdf", alone: "the extractor, file after file in one process", tool: "pdftotext",
		files: 24, filesQuick: 4, pages: 3 * pdfCopies, write: writePDFs,
		read: func(ctx context.Context, files []string) (int, error) {
			words := 0
			for _, f := range files {
				doc, err := extract.Extract(ctx, extract.Source{Name: filepath.Base(f), Path: f}, extract.FormatPDF, extract.Limits{})
				if err != nil {
					return 0, fmt.Errorf("extractor alone on %s: %w", f, err)
				}
				words += len(strings.Fields(doc.Text()))
			}
			return words, nil
		},
		check: func(d corpus.Document) error {
			if len(d.Pages) != 3*pdfCopies || !strings.Contains(d.Text, scantest.Sentence3) {
				return fmt.Errorf("%s: %d pages: not the PDF written", d.NativeID, len(d.Pages))
			}
			return nil
		}}
}

// writePDFs writes n text PDFs into dir with qpdf, each pdfCopies copies
// of the test corpus's PDF joined.
func writePDFs(dir string, n int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--empty", "--pages"}
	for range pdfCopies {
		args = append(args, scantest.PagesPDF())
	}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("report-%03d.pdf", i+1))
		if out, err := exec.Command("qpdf", append(args, "--", paths[i])...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("qpdf: %w: %s", err, bytes.TrimSpace(out))
		}
	}
	return paths, nil
}

// ocrKind reads scanned pages, a PNG file a page, through Tesseract, as
// the extractor does; its baseline is Tesseract alone on the pages
// listed in one invocation, which loads its language data once.
func ocrKind() extractKind {
	return extractKind{name: "ocr", alone: "Tesseract, the pages listed in one invocation", tool: "tesseract",
		files: 12, filesQuick: 2, pages: 1, write: writeScans,
		read: func(ctx context.Context, files []string) (int, error) {
			return tesseractList(ctx, files)
		},
		check: func(d corpus.Document) error {
			if len(d.OCR) != 1 || !strings.Contains(d.Text, scantest.Sentence2) {
				return fmt.Errorf("%s: %d page(s) OCR'd: not the page written", d.NativeID, len(d.OCR))
			}
			return nil
		}}
}

// writeScans writes n scanned pages as PNG files into dir and returns
// their paths. Each page is the lines of the test corpus's text PDF,
// rendered at 300 dpi as a scanner images them, repeated to fill the
// page in an order of its own.
func writeScans(dir string, n int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var lines []*image.Gray
	for page := 1; page <= 3; page++ {
		img, err := scantest.Render(scantest.PagesPDF(), page)
		if err != nil {
			return nil, err
		}
		lines = append(lines, img)
	}
	paths := make([]string, n)
	for i := range paths {
		stack := make([]*image.Gray, ocrLines)
		for j := range stack {
			stack[j] = lines[(i+j)%len(lines)]
		}
		var b bytes.Buffer
		if err := png.Encode(&b, scantest.StackPages(stack...)); err != nil {
			return nil, err
		}
		paths[i] = filepath.Join(dir, fmt.Sprintf("page-%03d.png", i+1))
		if err := os.WriteFile(paths[i], b.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// tesseractList runs one Tesseract process, on one thread as the
// extractor runs it, on the images listed in a file beside the first,
// and returns the words it recognised.
func tesseractList(ctx context.Context, images []string) (int, error) {
	list := images[0] + ".list"
	if err := os.WriteFile(list, []byte(strings.Join(images, "\n")+"\n"), 0o644); err != nil {
		return 0, err
	}
	defer os.Remove(list)
	cmd := exec.CommandContext(ctx, "tesseract", list, "stdout", "-l", "eng", "tsv")
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("tesseract alone: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	words := 0
	for line := range strings.Lines(string(out)) {
		if f := strings.Split(line, "\t"); len(f) == 12 && f[0] == "5" && strings.TrimSpace(f[11]) != "" {
			words++
		}
	}
	return words, nil
}
