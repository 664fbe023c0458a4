package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/ingest/producer"
)

// The parts measured over the documents' chunks move those chunks: the
// first n of the corpus under the producer's chunking, in order, each
// its own record; a corpus with fewer is an error.
func TestDocsChunkRecords(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if _, err := GenerateDocsCorpus(&b, 300, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := readCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	first := chunk.Split(docs[0].Text, producerChunking())
	recs, err := docsChunkRecords(path, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 200 {
		t.Fatalf("%d records, want 200", len(recs))
	}
	for i, c := range first {
		if recs[i].Text != c.Text || !strings.HasPrefix(recs[i].ID, docs[0].ID) {
			t.Fatalf("record %d is %q of %s, want chunk %d of %s", i, recs[i].Text[:min(40, len(recs[i].Text))], recs[i].ID, i, docs[0].ID)
		}
	}
	if len(recs[0].Text) == len(docs[0].Text) && len(first) > 1 {
		t.Error("a record holds its whole document")
	}
	// Each record is placed in its document, and a document cut at 200
	// chunks counts those it keeps.
	kept := map[string]int{}
	for i, rec := range recs {
		if rec.doc == "" || rec.ID != fmt.Sprintf("%s-%d", rec.doc, rec.index) {
			t.Fatalf("record %d: %s is chunk %d of %q", i, rec.ID, rec.index, rec.doc)
		}
		kept[rec.doc]++
	}
	for i, rec := range recs {
		if rec.count != kept[rec.doc] {
			t.Fatalf("record %d: chunk %d of %d, but %s keeps %d", i, rec.index, rec.count, rec.doc, kept[rec.doc])
		}
	}
	if _, err := docsChunkRecords(path, 100_000); err == nil {
		t.Error("asked for more chunks than the corpus holds: no error")
	}
}

// The bookkeeping ceiling over documents records them as the producer
// does: a document row per document, from its first chunk, in batches of
// producer.DefaultBatchDocs documents never cut inside a document, and a
// manifest row per chunk.
func TestProducerBatchesKeepDocumentsWhole(t *testing.T) {
	t.Parallel()
	var recs []jsonlRecord
	for d := range producer.DefaultBatchDocs + 50 {
		n := 1 + d%5
		for i := range n {
			recs = append(recs, jsonlRecord{ID: fmt.Sprintf("d%d-%d", d, i), Text: "text", doc: fmt.Sprintf("d%d", d), index: i, count: n})
		}
	}
	jobs, err := encodeJobs(recs)
	if err != nil {
		t.Fatal(err)
	}
	batches := producerBatches(jobs)
	if len(batches) != 2 {
		t.Fatalf("%d batches, want 2", len(batches))
	}
	chunks := 0
	for i, b := range batches {
		docs, rows, _, _ := producerRows(b)
		want := []int{producer.DefaultBatchDocs, 50}[i]
		if len(docs.DocIDs) != want || b[0].job.ChunkIndex != 0 {
			t.Errorf("batch %d: %d documents, first chunk %d; want %d from a first chunk", i, len(docs.DocIDs), b[0].job.ChunkIndex, want)
		}
		for j, id := range docs.DocIDs {
			if int(docs.ChunkCounts[j]) != 1+j%5 {
				t.Errorf("batch %d: %s of %d chunks, want %d", i, id, docs.ChunkCounts[j], 1+j%5)
			}
		}
		chunks += rows.Len()
	}
	if chunks != len(jobs) {
		t.Errorf("%d manifest rows of %d jobs", chunks, len(jobs))
	}
}
