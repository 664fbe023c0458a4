package bench

import "testing"

// sumSamples adds up a family's samples across label sets, or those
// with a label, and leaves out families whose names merely begin alike.
func TestSumSamples(t *testing.T) {
	t.Parallel()
	text := `# HELP sluice_bulk_members_total Chunk jobs admitted to bulk batches.
# TYPE sluice_bulk_members_total counter
sluice_bulk_members_total{outcome="admitted"} 200
sluice_bulk_members_total{outcome="applied"} 198
sluice_bulk_members_total{outcome="parked"} 2
sluice_bulk_members_total_extra{outcome="admitted"} 7
sluice_bulk_provider_requests_total{op="create"} 1
sluice_bulk_provider_requests_total{op="get"} 6
sluice_bulk_provider_requests_total{op="upload"} 1
sluice_bulk_request_lines_total 200
`
	for _, tc := range []struct {
		name, metric, label string
		want                float64
	}{
		{"every label set", "sluice_bulk_provider_requests_total", "", 8},
		{"one label", "sluice_bulk_members_total", `outcome="admitted"`, 200},
		{"no labels", "sluice_bulk_request_lines_total", "", 200},
		{"absent", "sluice_bulk_batches", "", 0},
	} {
		got, err := sumSamples(text, tc.metric, tc.label)
		if err != nil || got != tc.want {
			t.Errorf("%s: sumSamples(%s, %q) = %v, %v; want %v", tc.name, tc.metric, tc.label, got, err, tc.want)
		}
	}
	if _, err := sumSamples("sluice_x{op=\"get\" 1\n", "sluice_x", ""); err == nil {
		t.Error("unterminated labels parsed without an error")
	}
}
