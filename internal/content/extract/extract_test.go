package extract_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/pkg/classify"
)

// extractFile detects and extracts a testdata file.
func extractFile(t *testing.T, name string, src extract.Source, lim extract.Limits) (*extract.Document, error) {
	t.Helper()
	path := filepath.Join("testdata", name)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src.Name, src.Path = name, path
	return extract.Extract(context.Background(), src, extract.Detect(name, raw).Format, lim)
}

// wantClass fails unless err is an *extract.Error of the class, which
// classify.Classify reads too.
func wantClass(t *testing.T, err error, class string) *extract.Error {
	t.Helper()
	e, ok := errors.AsType[*extract.Error](err)
	if !ok {
		t.Fatalf("err = %v, want an *extract.Error of class %s", err, class)
	}
	if e.Class != class {
		t.Fatalf("class = %s (%v), want %s", e.Class, err, class)
	}
	if got := classify.Classify(err).Class; got != class {
		t.Fatalf("classify.Classify class = %s, want %s", got, class)
	}
	return e
}

func TestExtractDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		format extract.Format
		title  string
		// sections lists, in order, a phrase each section holds and its
		// location.
		sections []extract.Section
	}{
		{"pages.pdf", extract.FormatPDF, "Sample Report", []extract.Section{
			{Text: "This is page 1", Location: extract.Location{Page: 1}},
			{Text: "This is page 2", Location: extract.Location{Page: 2}},
			{Text: "This is page 3", Location: extract.Location{Page: 3}},
		}},
		{"sample.docx", extract.FormatDOCX, "Sluice Sample", []extract.Section{{Text: "Getting started\n\nSluice ingests documents"}}},
		{"sample.odt", extract.FormatODT, "Sluice Sample", []extract.Section{{Text: "Getting started\n\nSluice ingests documents"}}},
		{"sample.epub", extract.FormatEPUB, "Sluice Sample", nil},
		{"slides.pptx", extract.FormatPPTX, "Quarterly Review", []extract.Section{
			{Text: "Quarterly Review", Location: extract.Location{Page: 1}},
			{Text: "First slide\n\nRevenue grew", Location: extract.Location{Page: 2}},
			{Text: "Second slide\n\nHiring is on track\n\nThe ingestion pipeline shipped", Location: extract.Location{Page: 3}},
			{Text: "Third slide", Location: extract.Location{Page: 4}},
		}},
		{"slides.odp", extract.FormatODP, "Quarterly Review", []extract.Section{
			{Text: "Quarterly Review", Location: extract.Location{Page: 1}},
			{Text: "First slide", Location: extract.Location{Page: 2}},
			{Text: "Second slide", Location: extract.Location{Page: 3}},
			{Text: "Third slide", Location: extract.Location{Page: 4}},
		}},
		{"people.xlsx", extract.FormatXLSX, "", []extract.Section{
			{Text: "id\tname\tbio\tteam", Location: extract.Location{Sheet: "people", Row: 1}},
			{Text: "1\tAda\tWrote the first program.\tengines", Location: extract.Location{Sheet: "people", Row: 2}},
			{Text: "2\tGrace", Location: extract.Location{Sheet: "people", Row: 3}},
			{Text: "3\t\tNo name given.", Location: extract.Location{Sheet: "people", Row: 4}},
		}},
		{"people.ods", extract.FormatODS, "", []extract.Section{
			{Text: "id\tname\tbio\tteam", Location: extract.Location{Sheet: "people", Row: 1}},
			{Text: "1\tAda\tWrote the first program.\tengines", Location: extract.Location{Sheet: "people", Row: 2}},
			{Text: "2\tGrace", Location: extract.Location{Sheet: "people", Row: 3}},
			{Text: "3\t\tNo name given.", Location: extract.Location{Sheet: "people", Row: 4}},
		}},
		{"sample.md.gz", extract.FormatMarkdown, "", []extract.Section{{Text: "# Getting started\n\nSluice ingests documents"}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			doc, err := extractFile(t, tt.file, extract.Source{}, extract.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || doc.Title != tt.title {
				t.Errorf("format %s title %q, want %s %q", doc.Format, doc.Title, tt.format, tt.title)
			}
			text := doc.Text()
			if tt.sections == nil {
				for _, phrase := range []string{"Getting started", "Sluice ingests documents", "Grace", "Admiral", "The last paragraph mentions emphasis and a link."} {
					if !strings.Contains(text, phrase) {
						t.Errorf("text lacks %q:\n%s", phrase, text)
					}
				}
				return
			}
			if len(doc.Sections) != len(tt.sections) {
				t.Fatalf("%d sections, want %d: %+v", len(doc.Sections), len(tt.sections), doc.Sections)
			}
			for i, want := range tt.sections {
				got := doc.Sections[i]
				if !strings.Contains(got.Text, want.Text) || got.Location != want.Location {
					t.Errorf("section %d = %+v, want it to hold %q at %+v", i, got, want.Text, want.Location)
				}
			}
		})
	}
}

func TestExtractFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		src   extract.Source
		class string
	}{
		{"encrypted.pdf", extract.Source{}, classify.ClassEncrypted},
		{"encrypted.pdf", extract.Source{Password: "wrong"}, classify.ClassEncrypted},
		{"truncated.pdf", extract.Source{}, classify.ClassCorrupt},
		{"scan.pdf", extract.Source{}, classify.ClassNoTextLayer},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.src.Password, func(t *testing.T) {
			t.Parallel()
			_, err := extractFile(t, tt.file, tt.src, extract.Limits{})
			wantClass(t, err, tt.class)
		})
	}
}

func TestExtractEncryptedPDFWithPassword(t *testing.T) {
	t.Parallel()
	doc, err := extractFile(t, "encrypted.pdf", extract.Source{Password: "secret"}, extract.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Sections) != 3 || doc.Sections[2].Location.Page != 3 || !strings.Contains(doc.Sections[2].Text, "page 3") {
		t.Fatalf("sections = %+v, want the three pages", doc.Sections)
	}
}
