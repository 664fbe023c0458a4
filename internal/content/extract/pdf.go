package extract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/pkg/classify"
)

// minTextRunesPerPage is the number of non-space characters of a page's
// text layer below which the page is taken for a scan: a page stamp or a
// stray header is not a text layer.
const minTextRunesPerPage = 16

// pdfInfo is what pdfinfo reports that extraction needs.
type pdfInfo struct {
	pages int
	title string
}

// extractPDF reads the text layer of a PDF page by page with poppler's
// pdfinfo (page count, title, encryption) then pdftotext (the text, pages
// separated by form feeds), each in the sandbox of a tool. A page with
// (almost) no text layer is a scan: it is rendered and read by OCR, and
// only such pages are.
func extractPDF(ctx context.Context, src Source, lim Limits, o OCR) (*Document, error) {
	path, remove, err := src.onDisk()
	if err != nil {
		return nil, err
	}
	defer remove()
	t := tool{maxMemory: lim.MaxMemory, maxOutput: lim.MaxUncompressed}
	info, err := readPDFInfo(ctx, t, path, src.Password)
	if err != nil {
		return nil, err
	}
	if info.pages > lim.MaxPages {
		return nil, failf(classify.ClassTooLarge, "%d pages, over the limit of %d", info.pages, lim.MaxPages)
	}
	res, err := t.run(ctx, "pdftotext", append(passwordArgs(src.Password), "-enc", "UTF-8", "-eol", "unix", path, "-")...)
	if err != nil {
		return nil, popplerError("pdftotext", res, err)
	}
	texts := make([]string, info.pages)
	for i, page := range bytes.Split(res.stdout, []byte("\f")) {
		if i >= info.pages {
			break
		}
		texts[i] = normalize(tidyPage(string(page)))
	}
	doc := &Document{Format: FormatPDF, Title: info.title}
	scanned := false
	for i, text := range texts {
		page := i + 1
		if countLetters(text) < minTextRunesPerPage {
			scanned = true
			p, ocrText, err := ocrPDFPage(ctx, t, lim, o, path, src.Password, page)
			if err != nil {
				return nil, atPage(err, page)
			}
			doc.OCR = append(doc.OCR, p)
			if p.Words > 0 {
				text = ocrText
			}
		}
		if text != "" {
			doc.Sections = append(doc.Sections, Section{Text: text, Location: Location{Page: page}})
		}
	}
	if !scanned {
		return doc, nil
	}
	if len(doc.Sections) == 0 {
		return nil, failf(classify.ClassNoTextLayer, "no text on %d pages, even by OCR", info.pages)
	}
	return finishOCR(doc, o)
}

// renderDPI is the resolution scans are rendered at for OCR: Tesseract
// reads best at 300 dpi.
const renderDPI = 300

// ocrPDFPage renders one page of a PDF with pdftoppm, once pdfinfo has
// shown it within MaxPixels at renderDPI, and reads it with Tesseract.
func ocrPDFPage(ctx context.Context, t tool, lim Limits, o OCR, path, password string, page int) (PageOCR, string, error) {
	start := time.Now()
	n := strconv.Itoa(page)
	sz, err := pdfPageSize(ctx, t, path, password, page)
	if err != nil {
		return PageOCR{}, "", err
	}
	if err := checkPixels(sz, lim); err != nil {
		return PageOCR{}, "", err
	}
	res, err := t.run(ctx, "pdftoppm", append(passwordArgs(password), "-r", strconv.Itoa(renderDPI), "-f", n, "-l", n, "-gray", "-png", path)...)
	if err != nil {
		return PageOCR{}, "", popplerError("pdftoppm", res, err)
	}
	rec, err := tesseract(ctx, t, o, "stdin", res.stdout, renderDPI)
	if err != nil {
		return PageOCR{}, "", err
	}
	p := PageOCR{Page: page}
	for _, q := range rec.pages {
		p.Words, p.Confidence = q.Words, q.Confidence
	}
	p.Duration = time.Since(start)
	return p, normalize(rec.text[1]), nil
}

// pdfPageSize returns the size in pixels at renderDPI of one page, as
// pdfinfo reports it in points ("Page    3 size: 612 x 792 pts").
func pdfPageSize(ctx context.Context, t tool, path, password string, page int) (image.Point, error) {
	n := strconv.Itoa(page)
	res, err := t.run(ctx, "pdfinfo", append(passwordArgs(password), "-f", n, "-l", n, path)...)
	if err != nil {
		return image.Point{}, popplerError("pdfinfo", res, err)
	}
	for line := range strings.SplitSeq(string(res.stdout), "\n") {
		_, rest, ok := strings.Cut(line, " size:")
		if !ok || !strings.HasPrefix(line, "Page") {
			continue
		}
		var w, h float64
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%g x %g", &w, &h); err != nil {
			break
		}
		return image.Point{X: int(math.Ceil(w * renderDPI / 72)), Y: int(math.Ceil(h * renderDPI / 72))}, nil
	}
	return image.Point{}, failf(classify.ClassCorrupt, "pdfinfo reports no size for page %d", page)
}

// readPDFInfo runs pdfinfo.
func readPDFInfo(ctx context.Context, t tool, path, password string) (pdfInfo, error) {
	res, err := t.run(ctx, "pdfinfo", append(passwordArgs(password), "-enc", "UTF-8", path)...)
	if err != nil {
		return pdfInfo{}, popplerError("pdfinfo", res, err)
	}
	var info pdfInfo
	sc := bufio.NewScanner(bytes.NewReader(res.stdout))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "Pages":
			info.pages, _ = strconv.Atoi(value)
		case "Title":
			info.title = normalize(value)
		}
	}
	return info, nil
}

// passwordArgs passes a password as both the owner and the user password:
// poppler accepts whichever matches.
func passwordArgs(password string) []string {
	if password == "" {
		return nil
	}
	return []string{"-opw", password, "-upw", password}
}

// popplerError turns a poppler tool's failure into a class. Exit status 1
// is "error opening a PDF file": a wrong or missing password, or a file
// poppler cannot repair; 3 is a permissions error.
func popplerError(name string, res toolResult, err error) error {
	var exit *exec.ExitError
	if _, ok := errors.AsType[*Error](err); ok || !errors.As(err, &exit) {
		return err
	}
	detail := firstLine(res.stderr)
	switch {
	case strings.Contains(res.stderr, "Incorrect password"):
		return failf(classify.ClassEncrypted, "the PDF needs a password (%s): replay with its password", detail)
	case exit.ExitCode() == 3:
		return failf(classify.ClassEncrypted, "the PDF's permissions forbid extracting its text (%s)", detail)
	}
	return wrapf(classify.ClassCorrupt, err, "%s cannot read the PDF: %s", name, detail)
}

// tidyPage trims the trailing spaces of each line and the blank lines
// around a page.
func tidyPage(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// countLetters counts the non-space characters of s.
func countLetters(s string) int {
	n := 0
	for _, c := range s {
		if !unicode.IsSpace(c) {
			n++
		}
	}
	return n
}
