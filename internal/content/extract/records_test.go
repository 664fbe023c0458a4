package extract_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/pkg/classify"
)

// outcome is one record as a test sees it: a document's id, text and
// location, or an error's class, row and field.
type outcome struct {
	id, text, class, field string
	sheet                  string
	row                    int
	team                   string
}

func readRecords(t *testing.T, src extract.Source, format extract.Format) []outcome {
	t.Helper()
	schema := extract.RecordSchema{IDColumn: "id", TextColumns: []string{"name", "bio"}, MetadataColumns: []string{"team"}, Required: []string{"name"}}
	var got []outcome
	err := extract.ExtractRecords(context.Background(), src, format, schema, extract.Limits{}, func(doc *extract.Document, err error) error {
		if err != nil {
			e, ok := errors.AsType[*extract.Error](err)
			if !ok {
				t.Fatalf("record error %v is not an *extract.Error", err)
			}
			if classify.Classify(err).Class != e.Class {
				t.Fatalf("classify disagrees with %v", err)
			}
			got = append(got, outcome{class: e.Class, field: e.Field, row: e.Row})
			return nil
		}
		s := doc.Sections[0]
		got = append(got, outcome{id: doc.ID, text: s.Text, sheet: s.Location.Sheet, row: s.Location.Row, team: doc.Metadata["team"]})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestExtractRecordsFromTables(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file   string
		format extract.Format
		sheet  string
	}{
		{"people.csv", extract.FormatCSV, ""},
		{"people.xlsx", extract.FormatXLSX, "people"},
		{"people.ods", extract.FormatODS, "people"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got := readRecords(t, extract.Source{Path: filepath.Join("testdata", tt.file)}, tt.format)
			want := []outcome{
				{id: "1", text: "Ada\n\nWrote the first program.", sheet: tt.sheet, row: 2, team: "engines"},
				{id: "2", text: "Grace\n\nBuilt the first compiler.", sheet: tt.sheet, row: 3, team: "compilers"},
				{class: classify.ClassMissingRequiredField, field: "name", row: 4},
			}
			if len(got) != len(want) {
				t.Fatalf("records = %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestExtractRecordsGoOnPastBadRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		format extract.Format
		data   string
		want   []outcome
	}{
		{"jsonl", extract.FormatJSONL, "{\"id\":\"a\",\"name\":\"Ada\",\"team\":\"x\"}\n[1,2]\n\n{\"id\":\"c\",\"bio\":\"no name\"}\n{\"id\":\"d\",\"name\":\"Dan\",\"bio\":42}\n", []outcome{
			{id: "a", text: "Ada", row: 1, team: "x"},
			{class: classify.ClassInvalidRecord, row: 2},
			{class: classify.ClassMissingRequiredField, field: "name", row: 4},
			{id: "d", text: "Dan\n\n42", row: 5},
		}},
		{"json", extract.FormatJSON, `[{"id":"a","name":"Ada"},"nope",{"name":"No id"}]`, []outcome{
			{id: "a", text: "Ada", row: 1},
			{class: classify.ClassInvalidRecord, row: 2},
			{class: classify.ClassMissingRequiredField, field: "id", row: 3},
		}},
		{"tsv", extract.FormatTSV, "id\tname\n1\tAda\n2\tBob\textra\n3\tCy\n", []outcome{
			{id: "1", text: "Ada", row: 2},
			{class: classify.ClassInvalidRecord, row: 3},
			{id: "3", text: "Cy", row: 4},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := readRecords(t, extract.Source{Data: []byte(tt.data)}, tt.format)
			if len(got) != len(tt.want) {
				t.Fatalf("records = %+v, want %+v", got, tt.want)
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestExtractRecordsRefusesFormatsWithoutRecords(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "pages.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	err = extract.ExtractRecords(context.Background(), extract.Source{Data: raw}, extract.FormatPDF, extract.RecordSchema{TextColumns: []string{"x"}}, extract.Limits{}, func(*extract.Document, error) error { return nil })
	wantClass(t, err, classify.ClassUnsupportedFormat)
	if err := (extract.RecordSchema{}).Validate(); err == nil {
		t.Error("a schema without text columns validates")
	}
}
