package extract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"unicode"

	"github.com/sluicehq/sluice/pkg/classify"
)

// minTextRunesPerPage is the average number of non-space characters per
// page below which a PDF is taken for a scan: a page stamp or a stray
// header is not a text layer.
const minTextRunesPerPage = 16

// pdfInfo is what pdfinfo reports that extraction needs.
type pdfInfo struct {
	pages int
	title string
}

// extractPDF reads the text layer of a PDF page by page with poppler's
// pdfinfo (page count, title, encryption) then pdftotext (the text, pages
// separated by form feeds), each in the sandbox of a tool.
func extractPDF(ctx context.Context, src Source, lim Limits) (*Document, error) {
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
	doc := &Document{Format: FormatPDF, Title: info.title}
	letters := 0
	for i, page := range bytes.Split(res.stdout, []byte("\f")) {
		if i >= info.pages {
			break
		}
		text := normalize(tidyPage(string(page)))
		letters += countLetters(text)
		if text != "" {
			doc.Sections = append(doc.Sections, Section{Text: text, Location: Location{Page: i + 1}})
		}
	}
	if letters < minTextRunesPerPage*max(info.pages, 1) {
		return nil, failf(classify.ClassNoTextLayer, "%d characters of text on %d pages: a scan needs OCR", letters, info.pages)
	}
	return doc, nil
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
