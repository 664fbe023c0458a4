package shape_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/failure/shape"
)

// permanent is a window whose dead letters are all bad requests, a class
// of the chunk and not of the provider.
func permanent(counts map[string]int) shape.Window {
	w := shape.Window{}
	for s, n := range counts {
		w[s] = map[string]int{}
		if n > 0 {
			w[s]["bad_request"] = n
		}
	}
	return w
}

func TestLabel(t *testing.T) {
	t.Parallel()
	def := shape.Thresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: 0.6}
	for _, tc := range []struct {
		name    string
		counts  map[string]int
		th      shape.Thresholds
		code    string
		source  string
		spiking []string
	}{
		{"no sources", map[string]int{}, def, shape.Quiet, "", []string{}},
		{"active sources without dead letters", map[string]int{"a": 0, "b": 0}, def, shape.Quiet, "", []string{}},
		{"trickle over many sources", map[string]int{"a": 3, "b": 5, "c": 1, "d": 0}, def, shape.Trickle, "", []string{}},
		{"trickle in a single source", map[string]int{"a": 4}, def, shape.Trickle, "", []string{}},
		{"one count below the spike", map[string]int{"a": 19, "b": 1}, def, shape.Trickle, "", []string{}},
		{"spike in one source", map[string]int{"a": 2, "b": 45, "c": 1}, def, shape.OneSource, "b", []string{"b"}},
		{"share exactly at the threshold", map[string]int{"a": 70, "b": 30}, def, shape.OneSource, "a", []string{"a", "b"}},
		{"single active source spiking", map[string]int{"a": 20}, def, shape.OneSource, "a", []string{"a"}},
		{"dominant but below the spike count", map[string]int{"a": 15, "b": 1}, def, shape.Trickle, "", []string{}},
		{"every source", map[string]int{"a": 30, "b": 25, "c": 40}, def, shape.EverySource, "", []string{"a", "b", "c"}},
		{"most sources", map[string]int{"a": 30, "b": 25, "c": 40, "d": 2, "e": 0}, def, shape.EverySource, "", []string{"a", "b", "c"}},
		{"half the sources is not most", map[string]int{"a": 30, "b": 25, "c": 1, "d": 0}, def, shape.Mixed, "", []string{"a", "b"}},
		{"one spiking source without dominance", map[string]int{"a": 25, "b": 15, "c": 15}, def, shape.Mixed, "", []string{"a"}},
		{"one source rule wins over every source", map[string]int{"a": 100, "b": 25}, def, shape.OneSource, "a", []string{"a", "b"}},
		{"lower spike count", map[string]int{"a": 3, "b": 5, "c": 1}, shape.Thresholds{SpikeCount: 2, OneSourceShare: 0.7, EverySourceShare: 0.6}, shape.EverySource, "", []string{"a", "b"}},
		{"stricter every share", map[string]int{"a": 30, "b": 25, "c": 1}, shape.Thresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: 0.9}, shape.Mixed, "", []string{"a", "b"}},
		{"tie broken by name", map[string]int{"b": 40, "a": 40}, shape.Thresholds{SpikeCount: 20, OneSourceShare: 0.5, EverySourceShare: 1}, shape.OneSource, "a", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shape.Label(permanent(tc.counts), tc.th)
			if got.Code != tc.code || got.Source != tc.source || !slices.Equal(got.Spiking, tc.spiking) {
				t.Errorf("Label(%v) = %+v; want code %s, source %q, spiking %v", tc.counts, got, tc.code, tc.source, tc.spiking)
			}
			if got.Label != shape.Labels[tc.code] || got.Reason == "" {
				t.Errorf("label %q reason %q; want %q and a reason", got.Label, got.Reason, shape.Labels[tc.code])
			}
		})
	}
}

// A trickle's reason counts the sources that have dead letters, not
// those that ran cleanly beside them.
func TestLabelTrickleCountsSourcesWithDeadLetters(t *testing.T) {
	t.Parallel()
	th := shape.Thresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: 0.6}
	for want, counts := range map[string]map[string]int{
		"8 dead letters over 2 sources, none with ≥ 20": {"a": 3, "b": 5, "c": 0, "d": 0, "e": 0},
		"1 dead letter over 1 source, none with ≥ 20":   {"a": 1, "b": 0},
	} {
		if got := shape.Label(permanent(counts), th); got.Code != shape.Trickle || got.Reason != want {
			t.Errorf("Label(%v) = %s %q; want a trickle, %q", counts, got.Code, got.Reason, want)
		}
	}
}

// A spike made only of exhausted transient failures is the provider's,
// whether it hit one source or all; a trickle of the chunks' own failures
// beside it does not change that, a spike of them does.
func TestLabelReadsErrorClasses(t *testing.T) {
	t.Parallel()
	const te, to, bad, enc, ocr = "transient_exhausted", "timeout_exhausted", "bad_request", "invalid_encoding", "ocr_low_confidence"
	for _, tc := range []struct {
		name    string
		w       shape.Window
		code    string
		spiking []string
	}{
		{"provider outage in the only source, beside its poison", shape.Window{"demo": {te: 40, enc: 1, bad: 2}},
			shape.Provider, []string{"demo"}},
		{"timeouts only", shape.Window{"a": {to: 25}, "b": {}}, shape.Provider, []string{"a"}},
		{"both transient classes make the spike together", shape.Window{"a": {te: 12, to: 12}}, shape.Provider, []string{"a"}},
		{"provider outage in every source", shape.Window{"a": {te: 30}, "b": {te: 25, to: 5}, "c": {te: 40, bad: 3}},
			shape.Provider, []string{"a", "b", "c"}},
		{"provider outage beside a trickle elsewhere", shape.Window{"a": {te: 45}, "b": {bad: 19}},
			shape.Provider, []string{"a"}},
		{"the source's own failures spike too", shape.Window{"a": {te: 30, enc: 20}}, shape.OneSource, []string{"a"}},
		{"a source change beside a provider outage", shape.Window{"a": {te: 30}, "b": {enc: 25}},
			shape.EverySource, []string{"a", "b"}},
		{"transient failures below the spike are a trickle", shape.Window{"a": {te: 19}, "b": {bad: 3}},
			shape.Trickle, []string{}},
		{"a spike of the chunks' own failures is the source's", shape.Window{"a": {enc: 20, te: 10}, "b": {}},
			shape.OneSource, []string{"a"}},
		{"one branch office's scans below the bar", shape.Window{"branch-7": {ocr: 28, enc: 2}, "hq": {ocr: 1}},
			shape.ScansOneSource, []string{"branch-7"}},
		{"scans a minority of a source's spike", shape.Window{"a": {ocr: 10, enc: 20}}, shape.OneSource, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shape.Label(tc.w, shape.DefaultThresholds)
			if got.Code != tc.code || !slices.Equal(got.Spiking, tc.spiking) || got.Label != shape.Labels[tc.code] || got.Reason == "" {
				t.Errorf("Label(%v) = %+v; want code %s, spiking %v", tc.w, got, tc.code, tc.spiking)
			}
		})
	}
}
