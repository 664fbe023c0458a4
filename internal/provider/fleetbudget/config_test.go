package fleetbudget_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/config/configtest"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[fleetbudget.Config]{
		{Name: "a fingerprint", Config: fleetbudget.Config{Key: fleetbudget.Fingerprint("https://api.example.com/v1", "sk-1")}},
		{Name: "an explicit key", Config: fleetbudget.Config{Key: "org-main_1"}},
		{Name: "no key", Want: "BUDGET_KEY \"\": use 1 to 64 letters"},
		{Name: "a key that is not one subject token", Config: fleetbudget.Config{Key: "org.main"}, Want: "use 1 to 64 letters, digits, '-' or '_'"},
		{Name: "a heartbeat the bucket's TTL would outrun", Config: fleetbudget.Config{Key: "k", Heartbeat: 5 * time.Second}, Want: "a third of the bucket's TTL"},
		{Name: "a negative hungry wait", Config: fleetbudget.Config{Key: "k", HungryWait: -1}, Want: "use a positive share of the heartbeat"},
	})
}
