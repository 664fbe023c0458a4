package outbox_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/config/configtest"
	"github.com/sluicehq/sluice/pkg/outbox"
)

func TestRelayConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[outbox.RelayConfig]{
		{Name: "defaults"},
		{Name: "all set", Config: outbox.RelayConfig{BatchSize: 10, PollInterval: time.Second, MaxBackoff: time.Second, Retention: time.Hour}},
		{Name: "negative batch size", Config: outbox.RelayConfig{BatchSize: -1}, Want: "relay batch size -1: use at least 1"},
		{Name: "negative poll interval", Config: outbox.RelayConfig{PollInterval: -time.Second}, Want: "relay poll interval -1s"},
		{Name: "negative max backoff", Config: outbox.RelayConfig{MaxBackoff: -time.Second}, Want: "relay max backoff -1s"},
		{Name: "negative retention", Config: outbox.RelayConfig{Retention: -time.Hour}, Want: "outbox retention -1h0m0s"},
	})
}
