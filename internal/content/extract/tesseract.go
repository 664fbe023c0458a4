package extract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
)

// tesseractEnv keeps Tesseract to one thread: a worker is one core's
// worth of OCR, pages are recognised alike on every machine, and the
// address-space cap is not spent on thread stacks.
var tesseractEnv = []string{"OMP_THREAD_LIMIT=1"}

// recognised is the text Tesseract found on each page of an image.
type recognised struct {
	text  map[int]string
	pages map[int]*PageOCR
	order []int
}

// tesseract recognises the image at path ("stdin" to read img), at dpi
// when it is not 0, and returns its pages' text and confidence.
func tesseract(ctx context.Context, t tool, o OCR, path string, img []byte, dpi int) (recognised, error) {
	args := []string{path, "stdout", "-l", o.languageArg()}
	if dpi > 0 {
		args = append(args, "--dpi", strconv.Itoa(dpi))
	}
	res, err := t.runInput(ctx, img, tesseractEnv, "tesseract", append(args, "tsv")...)
	if err != nil {
		return recognised{}, tesseractError(o, res, err)
	}
	return parseTSV(res.stdout), nil
}

// tesseractError turns Tesseract's failure into a class: a language not
// installed is the deployment's fault, an image it cannot read the file's.
func tesseractError(o OCR, res toolResult, err error) error {
	var exit *exec.ExitError
	if _, ok := errors.AsType[*Error](err); ok || !errors.As(err, &exit) {
		return err
	}
	if strings.Contains(res.stderr, "Failed loading language") || strings.Contains(res.stderr, "Could not initialize tesseract") {
		return fmt.Errorf("%w: OCR languages %s: %s: %s", ErrToolMissing, o.languageArg(), firstLine(res.stderr), languageHint)
	}
	return wrapf(classify.ClassCorrupt, err, "tesseract cannot read the image: %s", firstLine(res.stderr))
}

// languageHint says how to install a missing OCR language.
const languageHint = "tesseract --list-langs lists the installed languages; install Debian's tesseract-ocr-<lang> (Alpine's tesseract-ocr-data-<lang>), or set ocr_languages to installed ones"

// TSV columns, as Tesseract's tsv output names them.
const (
	tsvLevel = iota
	tsvPage
	tsvBlock
	tsvPar
	tsvLine
	tsvWord
	tsvLeft
	tsvTop
	tsvWidth
	tsvHeight
	tsvConf
	tsvText
	tsvColumns
)

// tsvWordLevel is the level of a word's row.
const tsvWordLevel = "5"

// parseTSV reads Tesseract's TSV: one row per page, block, paragraph,
// line and word, each word with its confidence (0 to 100, -1 for a row
// that is not a word). Words of a line are joined by spaces, lines by
// newlines, and paragraphs and blocks by blank lines.
func parseTSV(out []byte) recognised {
	r := recognised{text: map[int]string{}, pages: map[int]*PageOCR{}}
	builders := map[int]*strings.Builder{}
	var last [4]int
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < tsvColumns || cols[tsvLevel] != tsvWordLevel {
			continue
		}
		word := strings.TrimSpace(cols[tsvText])
		conf, err := strconv.ParseFloat(cols[tsvConf], 64)
		if word == "" || err != nil || conf < 0 {
			continue
		}
		var at [4]int
		for i, c := range []int{tsvPage, tsvBlock, tsvPar, tsvLine} {
			at[i], _ = strconv.Atoi(cols[c])
		}
		page := at[0]
		b, ok := builders[page]
		if !ok {
			b = &strings.Builder{}
			builders[page] = b
			r.pages[page] = &PageOCR{Page: page}
			r.order = append(r.order, page)
		}
		switch {
		case b.Len() == 0:
		case at[1] != last[1] || at[2] != last[2]:
			b.WriteString("\n\n")
		case at[3] != last[3]:
			b.WriteString("\n")
		default:
			b.WriteString(" ")
		}
		b.WriteString(word)
		last = at
		p := r.pages[page]
		p.Confidence += conf / 100
		p.Words++
	}
	slices.Sort(r.order)
	for page, b := range builders {
		r.text[page] = b.String()
		p := r.pages[page]
		p.Confidence /= float64(p.Words)
	}
	return r
}

// CheckLanguages reports, as ErrToolMissing naming the package to
// install, an OCR language that Tesseract does not have, or Tesseract
// itself missing: a deployment fault a service finds at startup rather
// than on its first scan.
func CheckLanguages(ctx context.Context, languages []string) error {
	t := tool{maxMemory: DefaultMaxMemory, maxOutput: 1 << 20}
	res, err := t.run(ctx, "tesseract", "--list-langs")
	if err != nil {
		return fmt.Errorf("tesseract --list-langs: %w", err)
	}
	installed := map[string]bool{}
	for line := range strings.SplitSeq(string(res.stdout), "\n") {
		installed[strings.TrimSpace(line)] = true
	}
	var errs []error
	for _, l := range (OCR{Languages: languages}).withDefaults().Languages {
		if !installed[l] {
			pkg := "tesseract-ocr-" + strings.ToLower(strings.ReplaceAll(l, "_", "-"))
			errs = append(errs, fmt.Errorf("%w: OCR language %q is not installed (tesseract --list-langs lists those that are): install Debian's %s (Alpine's tesseract-ocr-data-%s), or leave %s out of ocr_languages", ErrToolMissing, l, pkg, l, l))
		}
	}
	return errors.Join(errs...)
}
