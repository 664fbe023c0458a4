package shape_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/shape"
)

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
			got := shape.Label(tc.counts, tc.th)
			if got.Code != tc.code || got.Source != tc.source || !slices.Equal(got.Spiking, tc.spiking) {
				t.Errorf("Label(%v) = %+v; want code %s, source %q, spiking %v", tc.counts, got, tc.code, tc.source, tc.spiking)
			}
			if got.Label != shape.Labels[tc.code] || got.Reason == "" {
				t.Errorf("label %q reason %q; want %q and a reason", got.Label, got.Reason, shape.Labels[tc.code])
			}
		})
	}
}
