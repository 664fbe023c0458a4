package producer_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/config/configtest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[producer.Config]{
		{Name: "defaults", Config: producer.Config{SourceID: "docs"}},
		{Name: "longest confirm delay", Config: producer.Config{SourceID: "docs", ConfirmDelay: producer.MaxConfirmDelay}},
		{Name: "no source", Want: "--source is required: name the corpus, e.g. --source docs"},
		{Name: "source with a space", Config: producer.Config{SourceID: "my docs"},
			Want: `--source "my docs": invalid character ' ' at byte 2`},
		{Name: "source with a space, the fix", Config: producer.Config{SourceID: "my docs"},
			Want: "may hold only A-Z a-z 0-9 _ -: rename it, e.g. --source my-docs"},
		{Name: "source with nothing usable", Config: producer.Config{SourceID: "..."}, Want: "rename it, e.g. --source docs"},
		{Name: "negative confirm delay", Config: producer.Config{SourceID: "docs", ConfirmDelay: -time.Second},
			Want: "--confirm-delay -1s: use a duration up to 10s"},
		{Name: "confirm delay near the sweeper's grace", Config: producer.Config{SourceID: "docs", ConfirmDelay: 30 * time.Second},
			Want: "well under the sweeper's OWED_GRACE"},
		{Name: "fast heartbeat", Config: producer.Config{SourceID: "docs", HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second}},
		{Name: "heartbeat timeout of three beats", Config: producer.Config{SourceID: "docs", HeartbeatInterval: 10 * time.Second, HeartbeatTimeout: 30 * time.Second}},
		{Name: "negative heartbeat interval", Config: producer.Config{SourceID: "docs", HeartbeatInterval: -time.Second},
			Want: "--run-heartbeat-interval -1s: use a positive duration"},
		{Name: "heartbeat timeout under three beats", Config: producer.Config{SourceID: "docs", HeartbeatInterval: 20 * time.Second},
			Want: "--run-heartbeat-timeout 30s: use at least 3 heartbeat intervals (1m0s)"},
		{Name: "negative heartbeat timeout", Config: producer.Config{SourceID: "docs", HeartbeatTimeout: -time.Second},
			Want: "--run-heartbeat-timeout -1s"},
	})
}

// A negative extraction limit is refused, naming its flag.
func TestServiceConfigValidatesExtractLimits(t *testing.T) {
	t.Parallel()
	docs := producer.Config{SourceID: "docs"}
	configtest.Run(t, []configtest.Case[*producer.ServiceConfig]{
		{Name: "defaults", Config: &producer.ServiceConfig{Config: docs}},
		{Name: "set", Config: &producer.ServiceConfig{Config: docs, Extract: extract.Limits{Timeout: time.Second, MaxPages: 10}}},
		{Name: "negative timeout", Config: &producer.ServiceConfig{Config: docs, Extract: extract.Limits{Timeout: -time.Second}},
			Want: "--extract-timeout is negative: set a positive value, such as the default 2m0s"},
		{Name: "negative memory", Config: &producer.ServiceConfig{Config: docs, Extract: extract.Limits{MaxMemory: -1}},
			Want: "--extract-max-memory is negative"},
	})
}
