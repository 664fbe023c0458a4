package publish_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/config/configtest"
)

func TestSweeperConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[publish.SweeperConfig]{
		{Name: "defaults"},
		{Name: "all set", Config: publish.SweeperConfig{Grace: time.Second, Interval: time.Second, BatchSize: 1}},
		{Name: "negative grace", Config: publish.SweeperConfig{Grace: -time.Second}, Want: "owed grace -1s: use 0 or more"},
		{Name: "negative interval", Config: publish.SweeperConfig{Interval: -time.Second}, Want: "sweep interval -1s"},
		{Name: "negative batch", Config: publish.SweeperConfig{BatchSize: -1}, Want: "sweep batch -1: use at least 1"},
	})
}
