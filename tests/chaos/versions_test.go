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
// letters of superseded chunks are resolved, and a shrunk or empty new
// version leaves no old chunk searchable. An unreadable new version is
// parked and leaves the version before it served, whole: a failed
// version never removes the served one.
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
	if n := f.count(`SELECT count(*) FROM chunk_embeddings c JOIN documents d USING (doc_id)
		WHERE d.status = 'failed' AND c.version = d.live_version AND c.text LIKE 'third version%'`); n != 1 {
		t.Errorf("%d chunks of the third version served after a fourth failed to read, want its 1", n)
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings`); n != 1 {
		t.Errorf("%d chunks stored after the document became unreadable, want the served version's 1", n)
	}
}

// searchVersions runs `sluice search` and returns the versions of the
// hits, by chunk text prefix.
func (f *fleet) searchVersions(query string) map[int64]int {
	f.t.Helper()
	code, out := f.sluice("search", query, "--json", "--k", "50")
	if code != 0 {
		f.t.Fatalf("sluice search exited %d:\n%s", code, out)
	}
	var res struct {
		Hits []struct {
			Version int64  `json:"version"`
			Text    string `json:"text"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		f.t.Fatalf("sluice search --json: %v\n%s", err, out)
	}
	versions := map[int64]int{}
	for _, h := range res.Hits {
		versions[h.Version]++
	}
	return versions
}

// Re-indexing is all-or-nothing: while a document's new
// version is incomplete, and when one of its chunks parks, search keeps
// returning the old version whole; once the new version is complete,
// search returns it alone.
func TestSearchServesTheOldVersionUntilTheNewIsComplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newFleet(t, fleetOptions{sim: []string{"--faults", poisonFaults(t, dir, "POISONMARK")}})
	f.services()
	corpus := filepath.Join(f.dir, "bluegreen")
	doc := filepath.Join(corpus, "doc.txt")
	version := func(tag string, poison bool) string {
		var b strings.Builder
		for i := range 4 {
			b.WriteString(strings.Repeat(tag+" river gate water ", 8))
			if poison && i == 2 {
				b.WriteString("POISONMARK ")
			}
			b.WriteString("\n\n")
		}
		return b.String()
	}
	writeFile(t, doc, version("alpha", false))
	f.runProducer("bg", corpus)
	f.converge(2*time.Minute, 1)
	v1 := f.searchVersions("river gate water")
	if v1[1] == 0 || len(v1) != 1 {
		t.Fatalf("search after the first version: %v, want version 1 only", v1)
	}

	// The second version parks one chunk: the document fails, and search
	// still returns the first version, every chunk of it.
	writeFile(t, doc, version("beta", true))
	f.runProducer("bg", corpus)
	f.converge(2*time.Minute, 1)
	if got := f.searchVersions("river gate water"); len(got) != 1 || got[1] != v1[1] {
		t.Errorf("search while the new version is failed: %v, want the old version whole (%v)", got, v1)
	}
	if n := f.count(`SELECT count(*) FROM documents WHERE status = 'failed' AND version = 2`); n != 1 {
		t.Errorf("the new version is not marked failed")
	}

	// A third version completes: search returns it alone, and nothing of
	// the old ones is kept.
	writeFile(t, doc, version("gamma", false))
	f.runProducer("bg", corpus)
	f.converge(2*time.Minute, 1)
	if got := f.searchVersions("river gate water"); len(got) != 1 || got[3] == 0 {
		t.Errorf("search after the new version completed: %v, want version 3 only", got)
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings_previous`) + f.count(`SELECT count(*) FROM chunk_embeddings WHERE version <> 3`); n != 0 {
		t.Errorf("%d rows of old versions left after the new one completed", n)
	}
}
