package bulk_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  bulk.Config
		want string
	}{
		{bulk.Config{Model: "m"}, ""},
		{bulk.Config{}, "Model is required"},
		{bulk.Config{Model: "m", MaxAge: -time.Second}, "MaxAge"},
		{bulk.Config{Model: "m", SliceSize: -1}, "SliceSize"},
		{bulk.Config{Model: "m", Interval: -time.Second}, "Interval"},
		{bulk.Config{Model: "m", Encoding: "hex"}, "Encoding"},
		{bulk.Config{Model: "m", Limits: batchapi.Limits{MaxBytes: -1}}, "must not be negative"},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
