package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
)

// budgets checks invariant 12 from the fleet budget's bucket: no budget
// whose live members' shares add up to more than the budget, and no
// members that disagree on it. Members recompute their shares at every
// heartbeat, each on its own beat, so a change of demand may overdraw a
// budget for up to one heartbeat: only a problem still there a heartbeat
// later is reported. A bucket not declared has nothing to check.
func (c *checker) budgets(ctx context.Context) error {
	fleet, err := fleetbudget.Read(ctx, c.js, "")
	if errors.Is(err, broker.ErrTopologyMissing) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the fleet budget: %w", err)
	}
	if len(fleet.Problems()) > 0 && wait.Sleep(ctx, fleetbudget.DefaultHeartbeat+fleetbudget.DefaultHeartbeat/2, nil) {
		if fleet, err = fleetbudget.Read(ctx, c.js, ""); err != nil {
			return fmt.Errorf("read the fleet budget: %w", err)
		}
	}
	c.rep.Budgets = fleet.Summaries()
	c.rep.Overdrawn = fleet.Problems()
	return nil
}
