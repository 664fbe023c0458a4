package dlq_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store/runs"
)

// The documents keyed in by hand are counted by source from the runs
// that stored them, whichever process ran the correction: three keyed
// for permits over two runs, none for a source that keyed nothing.
func TestKeyedDocumentsAreCountedBySource(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	for i, c := range []struct {
		source string
		keyed  int
	}{{"permits", 1}, {"permits", 2}, {"wiki", 0}} {
		id := fmt.Sprintf("run-%d", i)
		if err := runs.Open(t.Context(), b.db.Pool, id, c.source, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := runs.RecordFiles(t.Context(), b.db.Pool, id, runs.Files{Seen: c.keyed, Read: c.keyed, Keyed: c.keyed}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := metricValue(t, b.reg, "sluice_keyed_documents_total", map[string]string{"source": "permits"}); got != 3 {
		t.Errorf("permits: %v keyed documents, want 3", got)
	}
	if _, found := metricValue(t, b.reg, "sluice_keyed_documents_total", map[string]string{"source": "wiki"}); found {
		t.Error("wiki keyed nothing but has a series")
	}
}
