package chaos_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// poisonFaults writes an embed-sim faults file that rejects every input
// holding marker.
func poisonFaults(t *testing.T, dir, marker string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"poison": []map[string]string{{"match": marker, "kind": "invalid_input"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "faults.json")
	writeFile(t, path, string(b))
	return path
}

// A new version of a document supersedes the old one cleanly: dead
// letters of superseded chunks are resolved, and a shrunk, empty or
// unreadable new version leaves no old chunk searchable.
func TestSupersessionLeavesNoDebris(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newFleet(t, fleetOptions{sim: []string{"--faults", poisonFaults(t, dir, "POISONMARK")}})
	f.services()
	corpus := filepath.Join(f.dir, "versions")
	doc := filepath.Join(corpus, "doc.txt")
	para := func(tag string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(strings.Repeat(tag+" words flow through the gate ", 6))
			if i == n-1 {
				b.WriteString("POISONMARK ")
			}
			b.WriteString("\n\n")
		}
		return b.String()
	}
	writeFile(t, doc, para("first", 5))
	f.runProducer("ver", corpus)
	f.converge(2*time.Minute, 1)
	if n := f.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`); n == 0 {
		t.Fatal("the poisoned chunk was not parked; the test proves nothing")
	}
	oldChunks := f.count(`SELECT count(*) FROM ingest_manifest`)

	writeFile(t, doc, strings.Repeat("second version words ", 5))
	f.runProducer("ver", corpus)
	f.converge(2*time.Minute, 1)
	if n := f.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`); n != 0 {
		t.Errorf("%d dead letters of superseded chunks still open", n)
	}
	if n := f.count(`SELECT count(*) FROM dead_letters WHERE resolution = 'superseded'`); n == 0 {
		t.Error("no dead letter records why it was resolved")
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings`); n != 1 {
		t.Errorf("%d chunks searchable after shrinking %d chunks to 1", n, oldChunks)
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings WHERE text LIKE 'first%'`); n != 0 {
		t.Errorf("%d chunks of the old version still searchable", n)
	}

	writeFile(t, doc, "")
	f.runProducer("ver", corpus)
	f.converge(2*time.Minute, 1)
	if n := f.count(`SELECT count(*) FROM chunk_embeddings`); n != 0 {
		t.Errorf("%d chunks searchable after the document became empty", n)
	}

	writeFile(t, doc, strings.Repeat("third version words ", 5))
	f.runProducer("ver", corpus)
	f.converge(2*time.Minute, 1)
	if err := os.WriteFile(doc, []byte{0xff, 0xfe, 0x00, 0x01, 0x00, 0x00, 0xd8, 0x00}, 0o644); err != nil {
		t.Fatal(err)
	}
	f.runProducer("ver", corpus)
	f.converge(2*time.Minute, 1)
	if n := f.count(`SELECT count(*) FROM chunk_embeddings`); n != 0 {
		t.Errorf("%d chunks searchable after the document became unreadable", n)
	}
}
