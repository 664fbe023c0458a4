package embedsim_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/simtype"
)

func TestWithDrillKeepsAConfiguredScript(t *testing.T) {
	t.Parallel()
	plain := embedsim.Faults{}.WithDrill()
	if len(plain.Sequences) != 2 || len(plain.Poison) != 1 || plain.Validate() != nil {
		t.Fatalf("drill script %+v: want two sequences and one poison rule, valid", plain)
	}
	changed := embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: simtype.DrillNotFoundMarker, Sequence: "200"}}}.WithDrill()
	var notFound []string
	for _, r := range changed.Sequences {
		if r.Match == simtype.DrillNotFoundMarker {
			notFound = append(notFound, r.Sequence)
		}
	}
	if len(notFound) != 1 || notFound[0] != "200" || len(changed.Sequences) != 2 {
		t.Errorf("404 marker scripted %v; want only the configured 200, and the 503 marker kept", notFound)
	}
}
