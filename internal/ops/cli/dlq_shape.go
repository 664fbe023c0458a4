package cli

import "github.com/sluicehq/sluice/internal/failure/shape"

// validateThresholds says how to fix a shape threshold that cannot work.
func validateThresholds(th shape.Thresholds) error {
	if th.SpikeCount < 1 {
		return usageErr("--spike %d: want a count of at least 1", th.SpikeCount)
	}
	if !(th.OneSourceShare > 0 && th.OneSourceShare <= 1) {
		return usageErr("--one-source-share %g: want a fraction in (0, 1], e.g. 0.7", th.OneSourceShare)
	}
	if !(th.EverySourceShare > 0 && th.EverySourceShare <= 1) {
		return usageErr("--every-source-share %g: want a fraction in (0, 1], e.g. 0.6", th.EverySourceShare)
	}
	return nil
}
