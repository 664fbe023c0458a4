package retention_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/failure/retention"
	"github.com/sluicehq/sluice/internal/platform/config/configtest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[retention.Config]{
		{Name: "defaults"},
		{Name: "set", Config: retention.Config{Interval: time.Minute, Batch: 10}},
		{Name: "negative interval", Config: retention.Config{Interval: -time.Minute}, Want: "interval -1m0s: use a positive duration, or 0 for the default (1h0m0s)"},
		{Name: "negative batch", Config: retention.Config{Batch: -1}, Want: "batch -1: use at least 1, or 0 for the default (5000)"},
	})
}
