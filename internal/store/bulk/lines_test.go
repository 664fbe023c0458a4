package bulk_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
)

// repeated is a corpus text drawn from distinct: chunk i reads the
// (i mod distinct)th text, and text 3 is poison.
func repeated(distinct int) func(int) string {
	return func(i int) string {
		if i%distinct == 3 {
			return "a shared boilerplate line that holds POISON"
		}
		return fmt.Sprintf("shared paragraph %d about rivers", i%distinct)
	}
}

// A corpus of repeated texts, admitted by two sources in several
// transactions over batches that are still open or already at the
// provider, sends one request line per distinct text: every chunk that
// shares a text is stored with that text's one vector, and the poison
// text's chunks are all parked with its class.
func TestRepeatedTextsPayOnce(t *testing.T) {
	t.Parallel()
	const distinct = 7
	tb := setup(t, embedsim.Config{Faults: poisonFaults()}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 5}})
	wiki := corpus("wiki", 40, repeated(distinct))
	docs := corpus("docs", 12, repeated(distinct))
	tb.admit(t, wiki[:20])
	b, p := tb.builder(t, nil), tb.poller(t, nil)
	if err := b.Pass(tb.ctx); err != nil { // the full batch goes to the provider
		t.Fatal(err)
	}
	tb.admit(t, wiki[20:])
	tb.admit(t, docs)
	tb.converge(t, b, p)

	var lines int
	for _, pb := range tb.providerBatchList(t) {
		lines += pb.RequestCounts.Total
	}
	if lines > distinct {
		t.Errorf("the provider got %d request lines for %d distinct texts", lines, distinct)
	}
	all := append(slices.Clone(wiki), docs...)
	vectors := map[string]string{}
	for _, m := range all {
		var class *string
		var vec []float32
		if err := tb.owner.QueryRow(tb.ctx, `SELECT error_class, vector FROM test_vectors WHERE doc_id = $1 AND chunk_index = $2`,
			m.DocID, m.ChunkIndex).Scan(&class, &vec); err != nil {
			t.Fatalf("%s:%d: %v", m.DocID, m.ChunkIndex, err)
		}
		got := fmt.Sprint(vec)
		if class != nil {
			got = *class
		}
		if m.Text == repeated(distinct)(3) {
			if class == nil || *class != "bad_request" {
				t.Errorf("%s:%d of the poison text: %s, want parked as bad_request", m.DocID, m.ChunkIndex, got)
			}
			continue
		}
		if vec == nil {
			t.Errorf("%s:%d: no vector", m.DocID, m.ChunkIndex)
		}
		if want, ok := vectors[m.Text]; ok && want != got {
			t.Errorf("%s:%d: a vector other than its text's", m.DocID, m.ChunkIndex)
		}
		vectors[m.Text] = got
	}
	if twice := tb.handedTwice(t); len(twice) > 0 {
		t.Errorf("handed over twice: %v", twice)
	}
	if n := tb.metric(t, "sluice_bulk_members_total", "admitted"); int(n) != len(all) {
		t.Errorf("%v members admitted, want %d", n, len(all))
	}
}

// providerBatchList lists every batch the provider holds.
func (tb *testBundle) providerBatchList(t *testing.T) []batchapi.Batch {
	t.Helper()
	var out []batchapi.Batch
	after := ""
	for {
		page, err := tb.client.ListBatches(tb.ctx, batchapi.ListParams{Limit: 100, After: after})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Data...)
		if !page.HasMore {
			return out
		}
		after = page.LastID
	}
}
