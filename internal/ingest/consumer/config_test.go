package consumer_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/platform/config/configtest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[consumer.Config]{
		{Name: "defaults"},
		{Name: "heartbeat a quarter of ack wait", Config: consumer.Config{Heartbeat: 15 * time.Second, AckWait: time.Minute}},
		{Name: "heartbeat equal to ack wait", Config: consumer.Config{Heartbeat: time.Minute, AckWait: time.Minute}, Want: "heartbeat 1m0s is not below ack wait 1m0s"},
		{Name: "heartbeat above default ack wait", Config: consumer.Config{Heartbeat: 2 * time.Minute}, Want: "not below ack wait"},
		{Name: "negative batch size", Config: consumer.Config{BatchSize: -1}, Want: "batch size -1: use at least 1"},
		{Name: "negative fetch wait", Config: consumer.Config{FetchWait: -time.Second}, Want: "must be positive"},
	})
}
