package producer_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config/configtest"
	"github.com/sluicehq/sluice/internal/producer"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[producer.Config]{
		{Name: "defaults", Config: producer.Config{SourceID: "docs"}},
		{Name: "longest confirm delay", Config: producer.Config{SourceID: "docs", ConfirmDelay: producer.MaxConfirmDelay}},
		{Name: "no source", Want: "--source"},
		{Name: "negative confirm delay", Config: producer.Config{SourceID: "docs", ConfirmDelay: -time.Second},
			Want: "--confirm-delay -1s: use a duration up to 10s"},
		{Name: "confirm delay near the sweeper's grace", Config: producer.Config{SourceID: "docs", ConfirmDelay: 30 * time.Second},
			Want: "well under the sweeper's OWED_GRACE"},
	})
}
