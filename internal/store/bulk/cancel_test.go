package bulk_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/bulk/view"
	"github.com/sluicehq/sluice/migrations"
)

// Cancelling a source's bulk load cancels its batch at the provider and
// the one still open in the ledger, as the operator's role; their members
// are handed back as owed work, and another source's load goes on.
func TestCancelCancelsProviderBatches(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 20}})
	tb.readmit = false
	wiki, docs := corpus("wiki", 30, plain), corpus("docs", 5, other)
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
	done, err := c.Cancel(tb.ctx, "wiki")
	if err != nil || done != (bulk.Cancellation{Cancelled: 1, AtProvider: 1}) {
		t.Fatalf("Cancel = %+v, %v; want the open batch cancelled and 1 provider batch", done, err)
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
	tb.checkEnded(t, view.OutcomeCancelled, len(wiki), 0)
	if files := tb.providerFiles(t); len(files) != 0 {
		t.Errorf("files left at the provider: %v", files)
	}
}

// Without a client, cancelling marks the ledger only: the open batch is
// cancelled at once, the provider's batch keeps running until the
// poller's next pass cancels it there, and the builder never sends the
// sealed one.
func TestCancelWithoutAClientLeavesTheProviderToThePoller(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 20}})
	tb.readmit = false
	wiki := corpus("wiki", 45, plain)
	tb.admit(t, wiki[:30]) // batch 1 sealed, 2 open
	b, p := tb.builder(t, nil), tb.poller(t, nil)
	if err := b.Pass(tb.ctx); err != nil { // sends batch 1
		t.Fatal(err)
	}
	provider := tb.providerID(t, 1)
	if provider == "" {
		t.Fatalf("batch 1 not created: %v", tb.batchStates(t))
	}
	tb.admit(t, wiki[30:]) // batch 2 sealed, 3 open
	if got := tb.batchStates(t); got["created"] != 1 || got["sealed"] != 1 || got["open"] != 1 {
		t.Fatalf("batches %v, want one created, one sealed, one open", got)
	}

	c := bulk.NewCanceller(tb.db.RolePool(t, migrations.OperatorRole), nil, tb.deps)
	done, err := c.Cancel(tb.ctx, "wiki")
	if err != nil || done != (bulk.Cancellation{Cancelled: 2, Marked: 1}) {
		t.Fatalf("Cancel = %+v, %v; want 2 cancelled in the ledger and 1 marked", done, err)
	}
	if pb, err := tb.client.Batch(tb.ctx, provider); err != nil || pb.Status == batchapi.StatusCancelling || pb.Status == batchapi.StatusCancelled {
		t.Fatalf("provider batch = %+v, %v; want it untouched until the poller's pass", pb, err)
	}
	if st := tb.state(t, 1); st != "created" {
		t.Errorf("batch 1 is %s, want created (marked)", st)
	}

	tb.converge(t, b, p)
	if pb, err := tb.client.Batch(tb.ctx, provider); err != nil || pb.Status != batchapi.StatusCancelled {
		t.Errorf("provider batch = %+v, %v; want cancelled by the poller", pb, err)
	}
	if n := tb.providerBatches(t); len(n) != 1 {
		t.Errorf("provider batches %v, want batch 1's only", n)
	}
	if got := tb.batchStates(t); got["requeued"] != 3 || len(got) != 1 {
		t.Errorf("batches %v, want all 3 requeued", got)
	}
}
