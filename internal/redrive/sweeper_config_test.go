package redrive_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config/configtest"
	"github.com/sluicehq/sluice/internal/redrive"
)

func TestSweeperConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[redrive.SweeperConfig]{
		{Name: "defaults"},
		{Name: "all set", Config: redrive.SweeperConfig{Grace: time.Second, Interval: time.Second, BatchSize: 1}},
		{Name: "negative grace", Config: redrive.SweeperConfig{Grace: -time.Second}, Want: "owed grace -1s: use 0 or more"},
		{Name: "negative interval", Config: redrive.SweeperConfig{Interval: -time.Second}, Want: "sweep interval -1s"},
		{Name: "negative batch", Config: redrive.SweeperConfig{BatchSize: -1}, Want: "sweep batch -1: use at least 1"},
	})
}
