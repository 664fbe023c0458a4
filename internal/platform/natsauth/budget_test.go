package natsauth_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
)

// The roles that call the provider join the fleet budget and keep their
// entry alive with exactly their permissions, and cannot administer the
// bucket or read it through a consumer.
func TestBudgetMembersJoinButCannotAdministerTheBucket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, role := range []natsauth.Role{natsauth.Consumer, natsauth.Replayer} {
		c := b.as(t, role)
		m, err := fleetbudget.New(fleetbudget.Config{Key: "perm", Service: string(role)},
			fleetbudget.Deps{JS: c.js, Budget: embedder.NewBudget(600, 0, nil, zerolog.Nop()), Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Join(short(t)); err != nil {
			t.Fatalf("%s joins the fleet budget: %v", role, err)
		}
		// Its heartbeats keep the entry past the bucket's TTL, however
		// long the checks below take on a loaded machine.
		beat, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); m.Run(beat) }()
		t.Cleanup(func() { stop(); <-done })
		if _, err := c.js.CreateOrUpdateConsumer(short(t), broker.BudgetStream, jetstream.ConsumerConfig{}); err == nil {
			t.Fatalf("%s created a consumer on the budget's bucket", role)
		}
		c.refused("$JS.API.CONSUMER.CREATE." + broker.BudgetStream)
		if err := c.js.DeleteKeyValue(short(t), broker.BudgetBucket); err == nil {
			t.Fatalf("%s deleted the budget's bucket", role)
		}
		c.refused("$JS.API.STREAM.DELETE." + broker.BudgetStream)
	}
	fleet, err := fleetbudget.Read(context.Background(), b.owner, "perm")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fleet["perm"]); n != 2 {
		t.Fatalf("the bucket holds %d members of budget perm, want the consumer and the replayer", n)
	}
}

// The operator reads the fleet budget for reconcile, and cannot write
// it; roles that never call the provider cannot even read it.
func TestOnlyMembersAndTheOperatorSeeTheBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.as(t, natsauth.Operator)
	if _, err := fleetbudget.Read(short(t), o.js, ""); err != nil {
		t.Fatalf("the operator reads the fleet budget: %v", err)
	}
	if _, err := o.js.Publish(short(t), "$KV."+broker.BudgetBucket+".perm.forged", []byte(`{}`)); err == nil {
		t.Fatal("the operator wrote a member's entry")
	}
	o.refused("$KV." + broker.BudgetBucket + ".perm.forged")
	for _, role := range []natsauth.Role{natsauth.Producer, natsauth.Relay, natsauth.Console} {
		c := b.as(t, role)
		if _, err := fleetbudget.Read(short(t), c.js, ""); err == nil {
			t.Fatalf("%s read the fleet budget", role)
		}
		c.refused("$JS.API.STREAM.INFO." + broker.BudgetStream)
		if _, err := c.js.Publish(short(t), "$KV."+broker.BudgetBucket+".perm.forged", []byte(`{}`)); err == nil {
			t.Fatalf("%s wrote a member's entry", role)
		}
		c.refused("$KV." + broker.BudgetBucket + ".perm.forged")
	}
}

// A member keeps its entry when its heartbeats stop, since its process
// may still be finishing batches at its share, and gives the share back
// only when it leaves, with its own permissions.
func TestBudgetMemberHoldsItsShareUntilItLeaves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, natsauth.Consumer)
	m, err := fleetbudget.New(fleetbudget.Config{Key: "leave", Service: "consumer"},
		fleetbudget.Deps{JS: c.js, Budget: embedder.NewBudget(600, 0, nil, zerolog.Nop()), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Join(short(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.Run(ctx)
	members := func() int {
		fleet, err := fleetbudget.Read(short(t), b.owner, "leave")
		if err != nil {
			t.Fatal(err)
		}
		return len(fleet["leave"])
	}
	if n := members(); n != 1 {
		t.Fatalf("after its heartbeats stopped the bucket holds %d members, want the member still holding its share", n)
	}
	if err := m.Leave(short(t)); err != nil {
		t.Fatalf("the consumer leaves the fleet budget: %v", err)
	}
	if n := members(); n != 0 {
		t.Fatalf("after it left the bucket holds %d members, want none", n)
	}
}
