package runs_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store/runs"
)

func TestThresholdVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		t              runs.Threshold
		stored, parked int
		halt           bool
	}{
		{"disabled never halts", runs.Threshold{RejectionRatio: 0, MinChunks: 1}, 0, 100, false},
		{"below the minimum", runs.Threshold{RejectionRatio: 0.3, MinChunks: 20}, 10, 9, false},
		{"at the minimum, over the ratio", runs.Threshold{RejectionRatio: 0.3, MinChunks: 20}, 12, 8, true},
		{"exactly the ratio is not over it", runs.Threshold{RejectionRatio: 0.4, MinChunks: 20}, 12, 8, false},
		{"under the ratio", runs.Threshold{RejectionRatio: 0.5, MinChunks: 10}, 60, 40, false},
		{"all parked", runs.Threshold{RejectionRatio: 0.9, MinChunks: 5}, 0, 5, true},
		{"zero minimum counts as one", runs.Threshold{RejectionRatio: 0.5, MinChunks: 0}, 0, 1, true},
		{"nothing settled", runs.Threshold{RejectionRatio: 0.5, MinChunks: 0}, 0, 0, false},
	}
	for _, tt := range tests {
		halt, reason := tt.t.Verdict(tt.stored, tt.parked)
		if halt != tt.halt {
			t.Errorf("%s: halt = %v, want %v", tt.name, halt, tt.halt)
		}
		if halt && !strings.Contains(reason, "crossed the threshold") {
			t.Errorf("%s: reason %q does not say why", tt.name, reason)
		}
		if !halt && reason != "" {
			t.Errorf("%s: a reason %q without a halt", tt.name, reason)
		}
	}
}

func TestRejectionRatio(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		stored, parked int
		want           float64
	}{{0, 0, 0}, {3, 0, 0}, {0, 4, 1}, {1, 2, 2.0 / 3}, {60, 40, 0.4}} {
		if got := runs.RejectionRatio(tt.stored, tt.parked); got != tt.want {
			t.Errorf("RejectionRatio(%d, %d) = %v, want %v", tt.stored, tt.parked, got, tt.want)
		}
	}
}
