package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Reconcile reports every fleet budget's members, and a budget whose
// members' shares add up to more than it as a problem (invariant 12).
func TestReconcileReportsAnOverdrawnBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	_, js := testenv.NewJetStream(t, broker.Topology{})
	kv, err := js.KeyValue(ctx, broker.BudgetBucket)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, member string, share float64) {
		e := fleetbudget.Entry{Key: key, Member: member, Service: "consumer", RequestsPerMinute: 600, Share: share, Members: 2}
		value, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, key+"."+member, value); err != nil {
			t.Fatal(err)
		}
	}
	put("fair", "a", 0.5)
	put("fair", "b", 0.5)
	rep, err := reconcile.Run(ctx, db.Pool, js, reconcile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Overdrawn) != 0 || len(rep.Budgets) != 1 || rep.Budgets[0].Members != 2 {
		t.Fatalf("a budget split in halves: ok %v, overdrawn %v, budgets %+v; want it reported and fine", rep.OK, rep.Overdrawn, rep.Budgets)
	}
	put("greedy", "a", 0.7)
	put("greedy", "b", 0.7)
	rep, err = reconcile.Run(ctx, db.Pool, js, reconcile.Config{Redrive: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Overdrawn) != 1 || !strings.Contains(rep.Overdrawn[0], "budget greedy") {
		t.Fatalf("two members at 0.7 each: ok %v, overdrawn %v; want budget greedy reported, and not repairable", rep.OK, rep.Overdrawn)
	}
}
