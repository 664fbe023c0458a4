package systemtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
)

// A native id read twice in one run keeps its first document; every later
// one is parked as "<id>#dupK", whether it comes in the same batch, a
// later batch, or after a document the run found unchanged and so did
// not rewrite. The producer knows what its run read from the documents'
// rows, not from a set of ids in memory.
func TestRepeatedNativeIDsKeepTheFirstDocument(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{}, pipeline.Config{})

	// Batches of two: a's second record is in its batch, its third and
	// fourth in later ones, and a record named like a derived id comes
	// after that name was given out.
	first := s.produceRecords("dups", []string{
		`{"id":"a","text":"alpha"}`, `{"id":"a","text":"again"}`,
		`{"id":"b","text":"beta"}`, `{"id":"a","text":"third"}`,
		`{"id":"a#dup2","text":"a real id"}`, `{"id":"a","text":"fourth"}`,
	})
	if first.New != 6 || first.Failed != 4 {
		t.Errorf("first run: %d new, %d failed; want 6 new, of which 4 duplicates parked", first.New, first.Failed)
	}
	want := map[string]string{"a": "pending", "b": "pending", "a#dup2": "failed", "a#dup3": "failed",
		"a#dup2#dup2": "failed", "a#dup4": "failed"}
	s.checkDocuments("dups", want, map[string]int64{"a": 1})

	// A new run of the same source: a and b are unchanged and not
	// rewritten, yet a second a after them is still a duplicate, not a's
	// new version.
	second := s.produceRecords("dups", []string{
		`{"id":"a","text":"alpha"}`, `{"id":"b","text":"beta"}`, `{"id":"a","text":"replacement"}`,
	})
	if second.Unchanged != 2 || second.Changed != 1 || second.Failed != 1 {
		t.Errorf("second run: %d unchanged, %d changed, %d failed; want a and b unchanged and the repeated a parked",
			second.Unchanged, second.Changed, second.Failed)
	}
	s.checkDocuments("dups", want, map[string]int64{"a": 1, "a#dup2": 2})

	if n := s.count(`SELECT count(*) FROM outbox WHERE payload->>'error_detail' LIKE '%already read earlier in this run%'`); n != 5 {
		t.Errorf("%d dead letters say the id was already read, want 5 (4 in the first run, 1 in the second)", n)
	}
}

// produceRecords runs the producer over a JSONL input of records, two
// documents a batch.
func (s *system) produceRecords(source string, records []string) producer.Summary {
	t := s.t
	path := filepath.Join(t.TempDir(), source+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(records, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s.runProducer(producer.Config{SourceID: source, BatchDocs: 2}, path)
}

// checkDocuments checks that source has exactly the documents of want,
// by native id and status, and the versions of versions.
func (s *system) checkDocuments(source string, want map[string]string, versions map[string]int64) {
	t := s.t
	t.Helper()
	rows, err := s.db.Pool.Query(context.Background(),
		`SELECT source_native_id, status, version FROM documents WHERE source_id = $1`, source)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var id, status string
		var version int64
		if err := rows.Scan(&id, &status, &version); err != nil {
			t.Fatal(err)
		}
		got[id] = status
		if v, ok := versions[id]; ok && v != version {
			t.Errorf("document %q is at version %d, want %d", id, version, v)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, status := range want {
		if got[id] != status {
			t.Errorf("document %q: status %q, want %q", id, got[id], status)
		}
	}
	if len(got) != len(want) {
		t.Errorf("documents = %v, want %v", got, want)
	}
}
