package bulk_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/bulk/view"
	"github.com/sluicehq/sluice/migrations"
)

func viewIDs(vs []view.BatchView) []int64 {
	ids := make([]int64, len(vs))
	for i, v := range vs {
		ids[i] = v.ID
	}
	return ids
}

// An operator lists the ledger's batches newest first, by source, state
// and limit, and reads one batch with its members counted by state and
// error class; the console's role lists them but cannot count members.
func TestListAndShowAsTheirRoles(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 20}})
	tb.admit(t, corpus("wiki", 30, plain)) // batch 1 sealed with 20, batch 2 open with 10
	tb.admit(t, corpus("docs", 5, other))  // batch 3 open
	if err := tb.builder(t, nil).Pass(tb.ctx); err != nil {
		t.Fatal(err)
	}
	// Two of batch 2's members were parked as a bad request.
	if _, err := tb.owner.Exec(tb.ctx, `
		UPDATE bulk_members SET state = 'parked', error_class = 'bad_request', text = ''
		WHERE batch_id = 2 AND custom_id IN (SELECT custom_id FROM bulk_members WHERE batch_id = 2 ORDER BY custom_id LIMIT 2)`); err != nil {
		t.Fatal(err)
	}
	operator := tb.db.RolePool(t, migrations.OperatorRole)

	for _, c := range []struct {
		f    view.ListFilter
		want string
	}{
		{view.ListFilter{}, "[3 2 1]"},
		{view.ListFilter{Source: "wiki"}, "[2 1]"},
		{view.ListFilter{State: bulk.Created}, "[1]"},
		{view.ListFilter{Source: "docs", State: bulk.Created}, "[]"},
		{view.ListFilter{Limit: 1}, "[3]"},
	} {
		vs, err := view.List(tb.ctx, operator, c.f)
		if err != nil {
			t.Fatalf("List(%+v): %v", c.f, err)
		}
		if got := fmt.Sprint(viewIDs(vs)); got != c.want {
			t.Errorf("List(%+v) = %s, want %s", c.f, got, c.want)
		}
	}

	v, counts, err := view.Show(tb.ctx, operator, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.SourceID != "wiki" || v.State != bulk.Created || v.Requests != 20 || v.Tokens == 0 || v.ProviderBatchID == "" ||
		v.InputFileID == "" || v.SealedAt == nil || v.CreatedAt == nil || v.FinishedAt != nil || v.CancelRequestedAt != nil {
		t.Errorf("Show(1) = %+v, want wiki's created batch of 20", v)
	}
	if got := fmt.Sprint(counts); got != "[{pending  20}]" {
		t.Errorf("Show(1) members = %s, want 20 pending", got)
	}
	if _, counts, err = view.Show(tb.ctx, operator, 2); err != nil || fmt.Sprint(counts) != "[{parked bad_request 2} {pending  8}]" {
		t.Errorf("Show(2) members = %v, %v; want 2 parked as bad_request and 8 pending", counts, err)
	}
	if _, _, err := view.Show(tb.ctx, operator, 99); !errors.Is(err, view.ErrUnknownBatch) {
		t.Errorf("Show(99) = %v, want ErrUnknownBatch", err)
	}

	console := tb.db.RolePool(t, migrations.ConsoleRole)
	if vs, err := view.List(tb.ctx, console, view.ListFilter{Source: "wiki"}); err != nil || len(vs) != 2 {
		t.Errorf("List as %s = %d batches, %v; want wiki's 2", migrations.ConsoleRole, len(vs), err)
	}
	var pgErr *pgconn.PgError
	if _, _, err := view.Show(tb.ctx, console, 1); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("Show as %s = %v, want permission denied on bulk_members", migrations.ConsoleRole, err)
	}
}
