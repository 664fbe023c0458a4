package embedsim

import "github.com/sluicehq/sluice/internal/dev/simtype"

// drillSequences and drillPoison are the drill's script.
var (
	drillSequences = []SequenceRule{
		{Match: simtype.DrillTransientMarker, Sequence: "503,503,503,200"},
		{Match: simtype.DrillNotFoundMarker, Sequence: "404"},
	}
	drillPoison = []PoisonRule{{Match: simtype.DrillTooLongMarker, Kind: PoisonContextLength}}
)

// WithDrill returns f with the drill's script for the simtype drill
// markers added, which embed-sim runs unless --no-drill is given. A drill
// marker that f already scripts (a sequence or poison rule whose Match is
// the marker) keeps f's script: that is how a faults file changes the
// drill.
func (f Faults) WithDrill() Faults {
	scripted := map[string]bool{}
	for _, r := range f.Sequences {
		scripted[r.Match] = true
	}
	for _, r := range f.Poison {
		scripted[r.Match] = true
	}
	f.Sequences = append([]SequenceRule(nil), f.Sequences...)
	for _, r := range drillSequences {
		if !scripted[r.Match] {
			f.Sequences = append(f.Sequences, r)
		}
	}
	f.Poison = append([]PoisonRule(nil), f.Poison...)
	for _, r := range drillPoison {
		if !scripted[r.Match] {
			f.Poison = append(f.Poison, r)
		}
	}
	return f
}
