package bulk_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/batchapi"
	"github.com/sluicehq/sluice/internal/bulk"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/migrations"
)

// Cancelling a source's bulk load cancels its batch at the provider and
// the one still open in the ledger, as the operator's role; their members
// are handed back as owed work, and another source's load goes on.
func TestCancelCancelsProviderBatches(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 20}})
	tb.readmit = false
	wiki, docs := corpus("wiki", 30, plain), corpus("docs", 5, plain)
	tb.admit(t, wiki)
	tb.admit(t, docs)
	b, p := tb.builder(t, nil), tb.poller(t, nil)
	if err := b.Pass(tb.ctx); err != nil { // sends the full batch only
		t.Fatal(err)
	}
	provider := tb.providerID(t, 1)
	if provider == "" {
		t.Fatalf("batch 1 not created: %v", tb.batchStates(t))
	}

	c := bulk.NewCanceller(tb.db.RolePool(t, migrations.OperatorRole), tb.client, tb.deps)
	n, err := c.Cancel(tb.ctx, "wiki")
	if err != nil || n != 1 {
		t.Fatalf("Cancel = %d, %v; want 1 provider batch", n, err)
	}
	pb, err := tb.client.Batch(tb.ctx, provider)
	if err != nil || (pb.Status != batchapi.StatusCancelling && pb.Status != batchapi.StatusCancelled) {
		t.Fatalf("provider batch = %+v, %v; want cancelling", pb, err)
	}
	if st := tb.state(t, 2); st != "cancelled" {
		t.Errorf("open batch of wiki is %s, want cancelled", st)
	}

	tb.converge(t, b, p)
	if pb, err = tb.client.Batch(tb.ctx, provider); err != nil || pb.Status != batchapi.StatusCancelled {
		t.Errorf("provider batch = %+v, %v; want cancelled", pb, err)
	}
	for k, v := range tb.outcomes(t, docs) {
		if v != "stored" {
			t.Errorf("%s: %s, want stored", k, v)
		}
	}
	for k, v := range tb.outcomes(t, wiki) {
		if v != "missing" {
			t.Errorf("%s of the cancelled load: %s, want nothing stored", k, v)
		}
	}
	causes := tb.counts(t, `SELECT cause, count(*) FROM test_handed WHERE kind = 'requeued' GROUP BY cause`)
	var owed int
	for cause, n := range causes {
		owed += n
		if !strings.Contains(cause, "cancel") {
			t.Errorf("owed for %q, want a cancellation", cause)
		}
	}
	if owed != len(wiki) {
		t.Errorf("%d members owed again, want the %d of wiki", owed, len(wiki))
	}
	if n := tb.providerBatches(t); len(n) != 2 {
		t.Errorf("provider batches %v, want wiki's first and docs'", n)
	}
}
