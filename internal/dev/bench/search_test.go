package bench

import (
	"bytes"
	"slices"
	"testing"
)

// Quantiles interpolate between neighbours as PostgreSQL's
// percentile_cont does, so that the search latencies read like the
// pipeline's.
func TestQuantile(t *testing.T) {
	t.Parallel()
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[99-i] = float64(i + 1)
	}
	for _, c := range []struct {
		in   []float64
		q    float64
		want float64
	}{
		{nil, 0.99, 0},
		{[]float64{7}, 0.99, 7},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{hundred, 0.5, 50.5},
		{hundred, 0.99, 99.01},
		{hundred, 1, 100},
		{hundred, 0, 1},
	} {
		if got := quantile(c.in, c.q); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("quantile(%d values, %v) = %v, want %v", len(c.in), c.q, got, c.want)
		}
	}
}

// pgvector's binary input is the dimension, a zero, then big-endian
// float4s.
func TestVectorBinary(t *testing.T) {
	t.Parallel()
	got := vectorBinary([]byte{0xff}, []float32{1, -0.5})
	want := []byte{0xff, 0, 2, 0, 0, 0x3f, 0x80, 0, 0, 0xbf, 0, 0, 0}
	if !bytes.Equal(got, want) {
		t.Errorf("vectorBinary = % x, want % x", got, want)
	}
}

// The vector search runs at its own sizes when selected, 100k and 1M by
// default and small in quick mode.
func TestSearchSizes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		only  []string
		quick bool
		sizes []int
		want  []int
	}{
		{[]string{ScenarioPipeline384}, false, nil, nil},
		{[]string{ScenarioScale}, false, nil, nil},
		{[]string{ScenarioSearch}, false, nil, []int{100_000, 1_000_000}},
		{[]string{ScenarioSearch}, true, nil, []int{2_000}},
		{[]string{ScenarioSearch}, false, []int{5_000}, []int{5_000}},
	} {
		cfg := Config{Only: c.only, Quick: c.quick, SearchSizes: c.sizes}
		cfg.applyDefaults()
		got := cfg.searchSizes()
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: searchSizes = %v, want %v", c.only, got, c.want)
		}
	}
}
