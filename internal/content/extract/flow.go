package extract

import (
	"strings"
	"unicode"
)

// flow gathers extracted text into paragraphs and sections, counting the
// text against a budget so that no format can produce more than
// MaxUncompressed bytes of it.
type flow struct {
	para     strings.Builder
	paras    []string
	sections []Section
	out      *budget
}

func newFlow(lim Limits) *flow { return &flow{out: newBudget(lim.MaxUncompressed, "extracted text")} }

// write adds text to the current paragraph.
func (f *flow) write(s string) error {
	if err := f.out.spend(len(s)); err != nil {
		return err
	}
	f.para.WriteString(s)
	return nil
}

// endParagraph closes the current paragraph, dropping it if it is blank.
// Runs of spaces inside it collapse, and lines are trimmed.
func (f *flow) endParagraph() {
	p := tidy(f.para.String())
	f.para.Reset()
	if p != "" {
		f.paras = append(f.paras, p)
	}
}

// endSection closes the current section at loc, dropping it if it is empty.
func (f *flow) endSection(loc Location) {
	f.endParagraph()
	if len(f.paras) > 0 {
		f.sections = append(f.sections, Section{Text: normalize(strings.Join(f.paras, "\n\n")), Location: loc})
	}
	f.paras = f.paras[:0]
}

// tidy collapses runs of horizontal space other than tabs, which separate
// cells and tab stops, and trims each line.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		fields := strings.FieldsFunc(l, isHorizontalSpace)
		lines[i] = strings.Trim(strings.Join(fields, " "), "\t")
		if strings.TrimSpace(lines[i]) == "" {
			lines[i] = ""
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func isHorizontalSpace(c rune) bool { return c != '\n' && c != '\t' && unicode.IsSpace(c) }
