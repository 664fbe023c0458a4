package extract

import (
	"encoding/xml"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
)

// maxColumns is the widest sheet either format allows (XFD, 16384 columns).
const maxColumns = 16384

// maxRowRepeat bounds how often a repeated non-empty ODS row is emitted.
const maxRowRepeat = 1000

// rowFunc receives one non-empty row of a sheet, its 1-based number and
// its cells' text, trailing empty cells dropped.
type rowFunc func(sheet string, row int, cells []string) error

// sheetRows calls fn for every non-empty row of an XLSX or ODS workbook,
// sheet by sheet in the workbook's order.
func sheetRows(a *archive, format Format, fn rowFunc) error {
	if format == FormatODS {
		return odsRows(a, fn)
	}
	return xlsxRows(a, fn)
}

// extractSheets reads a workbook without a record schema: each non-empty
// row is a section located by its sheet and row, its cells separated by
// tabs.
func extractSheets(a *archive, format Format, lim Limits) (*Document, error) {
	f := newFlow(lim)
	err := sheetRows(a, format, func(sheet string, row int, cells []string) error {
		if err := f.write(strings.Join(cells, "\t")); err != nil {
			return err
		}
		f.endSection(Location{Sheet: sheet, Row: row})
		return nil
	})
	if err != nil {
		return nil, err
	}
	title := a.elementText("docProps/core.xml", "title")
	if format == FormatODS {
		title = a.elementText("meta.xml", "title")
	}
	return &Document{Format: format, Title: title, Sections: f.sections}, nil
}

const workbook = "xl/workbook.xml"

func xlsxRows(a *archive, fn rowFunc) error {
	type sheet struct{ name, rel string }
	var sheets []sheet
	err := a.xml(workbook, func(tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "sheet" {
			sheets = append(sheets, sheet{attr(se, "name"), relID(se)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	targets, err := a.relationships(workbook)
	if err != nil {
		return err
	}
	shared, err := a.sharedStrings()
	if err != nil {
		return err
	}
	for _, s := range sheets {
		part, ok := targets[s.rel]
		if !ok {
			return failf(classify.ClassCorrupt, "sheet %q has no part", s.name)
		}
		if err := a.xlsxSheet(part, s.name, shared, fn); err != nil {
			return err
		}
	}
	return nil
}

// sharedStrings reads xl/sharedStrings.xml: the text of each <si>, runs
// joined, phonetic hints (rPh) left out.
func (a *archive) sharedStrings() ([]string, error) {
	const part = "xl/sharedStrings.xml"
	if !a.has(part) {
		return nil, nil
	}
	var (
		out      []string
		b        strings.Builder
		inT, rPh bool
	)
	err := a.xml(part, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				b.Reset()
			case "t":
				inT = true
			case "rPh":
				rPh = true
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				out = append(out, b.String())
			case "t":
				inT = false
			case "rPh":
				rPh = false
			}
		case xml.CharData:
			if inT && !rPh {
				b.Write(t)
			}
		}
		return nil
	})
	return out, err
}

// xlsxSheet streams one worksheet's rows to fn.
func (a *archive) xlsxSheet(part, name string, shared []string, fn rowFunc) error {
	var (
		row, col      int
		cells         []string
		typ           string
		value         strings.Builder
		inValue, inIs bool
	)
	return a.xml(part, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row++
				if r, err := strconv.Atoi(attr(t, "r")); err == nil && r > 0 {
					row = r
				}
				cells, col = cells[:0], 0
			case "c":
				typ, col = attr(t, "t"), columnOf(attr(t, "r"), col)
				value.Reset()
			case "v":
				inValue = true
			case "is":
				inIs = true
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "v":
				inValue = false
			case "is":
				inIs = false
			case "c":
				cells = setCell(cells, col, cellText(typ, value.String(), shared))
				col++
			case "row":
				if cells = trimCells(cells); len(cells) > 0 {
					return fn(name, row, cells)
				}
			}
		case xml.CharData:
			if inValue || inIs {
				value.Write(t)
			}
		}
		return nil
	})
}

// cellText turns a cell's raw value into its text by its type.
func cellText(typ, raw string, shared []string) string {
	switch typ {
	case "s":
		i, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || i < 0 || i >= len(shared) {
			return ""
		}
		return shared[i]
	case "b":
		if strings.TrimSpace(raw) == "1" {
			return "TRUE"
		}
		return "FALSE"
	}
	return raw
}

// columnOf returns the 0-based column of a cell reference such as "AB12",
// or next when the reference is missing or unreadable.
func columnOf(ref string, next int) int {
	col := 0
	for _, c := range ref {
		if c < 'A' || c > 'Z' {
			break
		}
		col = col*26 + int(c-'A'+1)
	}
	if col == 0 || col > maxColumns {
		return next
	}
	return col - 1
}

// setCell puts v in cells at col, padding with empty cells.
func setCell(cells []string, col int, v string) []string {
	for len(cells) < col {
		cells = append(cells, "")
	}
	if col < len(cells) {
		cells[col] = v
		return cells
	}
	return append(cells, v)
}

// trimCells drops trailing empty cells.
func trimCells(cells []string) []string {
	for len(cells) > 0 && strings.TrimSpace(cells[len(cells)-1]) == "" {
		cells = cells[:len(cells)-1]
	}
	return cells
}

// odsRows streams the rows of an ODS content.xml, expanding repeated
// cells and rows (number-columns-repeated, number-rows-repeated) only
// where they hold text.
func odsRows(a *archive, fn rowFunc) error {
	var (
		sheet                 string
		row, rowRepeat        int
		cells                 []string
		cellRepeat, pending   int
		cell                  strings.Builder
		inCell, cellParagraph bool
	)
	return a.xml("content.xml", func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "table":
				sheet, row = attr(t, "name"), 0
			case "table-row":
				rowRepeat = repeat(attr(t, "number-rows-repeated"), 1<<20)
				cells, pending = cells[:0], 0
			case "table-cell", "covered-table-cell":
				cellRepeat = repeat(attr(t, "number-columns-repeated"), maxColumns)
				cell.Reset()
				inCell, cellParagraph = true, false
			case "p", "h":
				if inCell && cellParagraph {
					cell.WriteByte('\n')
				}
				cellParagraph = true
			case "s":
				cell.WriteByte(' ')
			case "tab":
				cell.WriteByte('\t')
			case "line-break":
				cell.WriteByte('\n')
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "table-cell", "covered-table-cell":
				inCell = false
				v := cell.String()
				if strings.TrimSpace(v) == "" {
					pending += cellRepeat
					return nil
				}
				for range min(pending, maxColumns-len(cells)) {
					cells = append(cells, "")
				}
				pending = 0
				for range min(cellRepeat, maxColumns-len(cells)) {
					cells = append(cells, v)
				}
			case "table-row":
				first := row + 1
				row += rowRepeat
				if len(cells) == 0 {
					return nil
				}
				for i := range min(rowRepeat, maxRowRepeat) {
					if err := fn(sheet, first+i, cells); err != nil {
						return err
					}
				}
			}
		case xml.CharData:
			if inCell {
				cell.Write(t)
			}
		}
		return nil
	})
}

// repeat parses a repetition count, 1 when absent, at most limit.
func repeat(s string, limit int) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	return min(n, limit)
}
