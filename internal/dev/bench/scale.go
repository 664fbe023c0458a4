package bench

import "slices"

// ScenarioScale1M is the 384-dimension pipeline at Config.Scale1MChunks,
// compared with the scale run: it runs only when asked for (--scale-1m or
// --only scale-1m), and brings the scale run along.
const ScenarioScale1M = "scale-1m"

// optInScenarios are the scenarios --only accepts that no invocation runs
// unless asked for by name: they take long.
var optInScenarios = []string{ScenarioScale1M}

// defaultScale1MChunks is Config.Scale1MChunks' default.
const defaultScale1MChunks = 1_000_000

// withScale1M returns only with the scale-1m run added when scale1M asks
// for it, and the scale run it is compared with added whenever it is
// selected.
func withScale1M(only []string, scale1M bool) []string {
	only = slices.Clip(only)
	if scale1M && !slices.Contains(only, ScenarioScale1M) {
		only = append(only, ScenarioScale1M)
	}
	if slices.Contains(only, ScenarioScale1M) && !slices.Contains(only, ScenarioScale) {
		only = append(only, ScenarioScale)
	}
	return only
}
