package cli

import (
	"errors"
	"slices"
	"testing"
)

func TestLabelShape(t *testing.T) {
	t.Parallel()
	def := shapeThresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: 0.6}
	for _, tc := range []struct {
		name    string
		counts  map[string]int
		th      shapeThresholds
		code    string
		source  string
		spiking []string
	}{
		{"no sources", map[string]int{}, def, shapeQuiet, "", []string{}},
		{"active sources without dead letters", map[string]int{"a": 0, "b": 0}, def, shapeQuiet, "", []string{}},
		{"trickle over many sources", map[string]int{"a": 3, "b": 5, "c": 1, "d": 0}, def, shapeTrickle, "", []string{}},
		{"trickle in a single source", map[string]int{"a": 4}, def, shapeTrickle, "", []string{}},
		{"one count below the spike", map[string]int{"a": 19, "b": 1}, def, shapeTrickle, "", []string{}},
		{"spike in one source", map[string]int{"a": 2, "b": 45, "c": 1}, def, shapeOneSource, "b", []string{"b"}},
		{"share exactly at the threshold", map[string]int{"a": 70, "b": 30}, def, shapeOneSource, "a", []string{"a", "b"}},
		{"single active source spiking", map[string]int{"a": 20}, def, shapeOneSource, "a", []string{"a"}},
		{"dominant but below the spike count", map[string]int{"a": 15, "b": 1}, def, shapeTrickle, "", []string{}},
		{"every source", map[string]int{"a": 30, "b": 25, "c": 40}, def, shapeEverySource, "", []string{"a", "b", "c"}},
		{"most sources", map[string]int{"a": 30, "b": 25, "c": 40, "d": 2, "e": 0}, def, shapeEverySource, "", []string{"a", "b", "c"}},
		{"half the sources is not most", map[string]int{"a": 30, "b": 25, "c": 1, "d": 0}, def, shapeMixed, "", []string{"a", "b"}},
		{"one spiking source without dominance", map[string]int{"a": 25, "b": 15, "c": 15}, def, shapeMixed, "", []string{"a"}},
		{"one source rule wins over every source", map[string]int{"a": 100, "b": 25}, def, shapeOneSource, "a", []string{"a", "b"}},
		{"lower spike count", map[string]int{"a": 3, "b": 5, "c": 1}, shapeThresholds{2, 0.7, 0.6}, shapeEverySource, "", []string{"a", "b"}},
		{"stricter every share", map[string]int{"a": 30, "b": 25, "c": 1}, shapeThresholds{20, 0.7, 0.9}, shapeMixed, "", []string{"a", "b"}},
		{"tie broken by name", map[string]int{"b": 40, "a": 40}, shapeThresholds{20, 0.5, 1}, shapeOneSource, "a", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := labelShape(tc.counts, tc.th)
			if got.Code != tc.code || got.Source != tc.source || !slices.Equal(got.Spiking, tc.spiking) {
				t.Errorf("labelShape(%v) = %+v; want code %s, source %q, spiking %v", tc.counts, got, tc.code, tc.source, tc.spiking)
			}
			if got.Label != shapeLabels[tc.code] || got.Reason == "" {
				t.Errorf("label %q reason %q; want %q and a reason", got.Label, got.Reason, shapeLabels[tc.code])
			}
		})
	}
}

func TestShapeThresholdsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		th shapeThresholds
		ok bool
	}{
		{shapeThresholds{20, 0.7, 0.6}, true},
		{shapeThresholds{1, 1, 1}, true},
		{shapeThresholds{0, 0.7, 0.6}, false},
		{shapeThresholds{20, 0, 0.6}, false},
		{shapeThresholds{20, 1.5, 0.6}, false},
		{shapeThresholds{20, 0.7, -0.1}, false},
	} {
		err := tc.th.validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUsage)) {
			t.Errorf("validate(%+v) = %v; want ok=%v, else a usage error", tc.th, err, tc.ok)
		}
	}
}
