package producer_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// formatTree copies the extraction test corpus's documents into a fresh
// directory and returns it.
func formatTree(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("..", "..", "content", "extract", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// recordedChunk is a chunk job as the manifest records it.
type recordedChunk struct {
	text string
	meta map[string]any
}

// A run over PDF, Office, OpenDocument, EPUB and gzipped files records
// each one's text in its chunk jobs, a PDF's or a presentation's chunks
// say which page or slide they came from, and an encrypted, a truncated
// and a scanned PDF are each parked with their class; the run's file
// counts add up.
func TestProducerReadsDocumentFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	readable := map[string]string{
		"pages.pdf":    "page 2 of the sample report",
		"sample.docx":  "Sluice ingests documents for retrieval",
		"sample.odt":   "Sluice ingests documents for retrieval",
		"slides.pptx":  "Revenue grew in every region",
		"sample.epub":  "Sluice ingests documents for retrieval",
		"sample.md.gz": "Sluice ingests documents for retrieval",
	}
	parked := map[string]string{
		"encrypted.pdf": classify.ClassEncrypted,
		"truncated.pdf": classify.ClassCorrupt,
		"scan.pdf":      classify.ClassNoTextLayer,
	}
	var names []string
	for name := range readable {
		names = append(names, name)
	}
	for name := range parked {
		names = append(names, name)
	}
	root := formatTree(t, names...)

	tally := &producer.FileTally{}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{root}, Extractor: corpus.LimitedExtractor{}, OnFile: tally.Observe})
	if err != nil {
		t.Fatal(err)
	}
	// Chunks of at most 100 characters: one per page of pages.pdf.
	cfg := producer.Config{SourceID: "docs", Chunk: chunk.Config{Size: 100, Unit: chunk.UnitChars}}
	p, err := producer.New(cfg, db.Pool, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.Files = tally
	sum, err := p.Run(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if f := sum.Files; f.Seen != len(names) || f.Read != len(readable) || f.Parked != len(parked) || f.ExcludedTotal() != 0 {
		t.Errorf("files %+v; want %d seen = %d read + %d parked", f, len(names), len(readable), len(parked))
	}

	chunks := map[string][]recordedChunk{}
	rows, err := db.Pool.Query(ctx, `
		SELECT d.source_native_id, convert_from(m.job, 'UTF8')::jsonb->>'text', convert_from(m.job, 'UTF8')::jsonb->'metadata'
		FROM ingest_manifest m JOIN documents d USING (doc_id) WHERE d.source_id = 'docs' AND m.status = 'pending' ORDER BY 1, m.chunk_index`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var native string
		var c recordedChunk
		var meta []byte
		if err := rows.Scan(&native, &c.text, &meta); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(meta, &c.meta); err != nil {
			t.Fatalf("%s: metadata %s: %v", native, meta, err)
		}
		chunks[native] = append(chunks[native], c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, phrase := range readable {
		var found *recordedChunk
		for i, c := range chunks[name] {
			if strings.Contains(c.text, phrase) {
				found = &chunks[name][i]
			}
		}
		if found == nil {
			t.Errorf("%s: no chunk of %d holds %q", name, len(chunks[name]), phrase)
			continue
		}
		first, last := pagesOf(found.meta)
		switch name {
		case "pages.pdf":
			if found.meta["page"] != float64(2) || found.meta["format"] != "pdf" {
				t.Errorf("%s: the chunk %q has metadata %v, want page 2", name, found.text, found.meta)
			}
		case "slides.pptx":
			// The title slide is the first: the phrase is on the second.
			if first > 2 || last < 2 {
				t.Errorf("%s: the chunk %q has metadata %v, want slides that include 2", name, found.text, found.meta)
			}
		default:
			if first != 0 {
				t.Errorf("%s: a document without pages has chunk metadata %v", name, found.meta)
			}
		}
	}
	for _, c := range chunks["pages.pdf"] {
		if first, _ := pagesOf(c.meta); first == 0 {
			t.Errorf("pages.pdf: chunk %q has no page: %v", c.text, c.meta)
		}
	}
	var title string
	if err := db.Pool.QueryRow(ctx, `SELECT metadata->>'title' FROM documents WHERE doc_id = $1`,
		messages.DocID("docs", "sample.epub")).Scan(&title); err != nil || title != "Sluice Sample" {
		t.Errorf("sample.epub: title %q (%v), want the book's", title, err)
	}

	for name, class := range parked {
		var raw []byte
		if err := db.Pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE payload->>'doc_id' = $1`,
			messages.DocID("docs", name)).Scan(&raw); err != nil {
			t.Fatalf("%s: no dead letter: %v", name, err)
		}
		dl, err := messages.DecodeDeadLetter(raw)
		if err != nil {
			t.Fatal(err)
		}
		if dl.ErrorClass != class || dl.ErrorCode != "pdf" || dl.Stage != "produce" || !strings.Contains(dl.ErrorDetail, class) {
			t.Errorf("%s: dead letter %s/%s at %s: %q; want %s", name, dl.ErrorClass, dl.ErrorCode, dl.Stage, dl.ErrorDetail, class)
		}
	}
}

// pagesOf reads a chunk's "page" or "pages" metadata: 0, 0 when it has
// neither.
func pagesOf(meta map[string]any) (first, last int) {
	if p, ok := meta["page"].(float64); ok {
		return int(p), int(p)
	}
	if ps, ok := meta["pages"].([]any); ok && len(ps) == 2 {
		a, _ := ps[0].(float64)
		b, _ := ps[1].(float64)
		return int(a), int(b)
	}
	return 0, 0
}
