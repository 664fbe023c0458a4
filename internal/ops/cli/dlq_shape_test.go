package cli

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/failure/shape"
)

func TestShapeThresholdsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		th shape.Thresholds
		ok bool
	}{
		{shape.Thresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: 0.6}, true},
		{shape.Thresholds{SpikeCount: 1, OneSourceShare: 1, EverySourceShare: 1}, true},
		{shape.Thresholds{SpikeCount: 0, OneSourceShare: 0.7, EverySourceShare: 0.6}, false},
		{shape.Thresholds{SpikeCount: 20, OneSourceShare: 0, EverySourceShare: 0.6}, false},
		{shape.Thresholds{SpikeCount: 20, OneSourceShare: 1.5, EverySourceShare: 0.6}, false},
		{shape.Thresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: -0.1}, false},
	} {
		err := validateThresholds(tc.th)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUsage)) {
			t.Errorf("validate(%+v) = %v; want ok=%v, else a usage error", tc.th, err, tc.ok)
		}
	}
}
