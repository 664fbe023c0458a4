package embedsim

// Markers of the classification drill (`sluice drill`). An input holding
// one of them gets the drill's scripted answers when the server runs
// Faults.WithDrill, which embed-sim does unless --no-drill is given, so a
// running system can be drilled without restarting its embedder.
const (
	// DrillTransientMarker is answered 503, 503, 503, then 200.
	DrillTransientMarker = "sluice-drill:503x3"
	// DrillNotFoundMarker is answered 404 on every request.
	DrillNotFoundMarker = "sluice-drill:404"
	// DrillTooLongMarker is answered 400 context_length_exceeded, as a
	// model answers an input longer than its context.
	DrillTooLongMarker = "sluice-drill:too-long"
)

// drillSequences and drillPoison are the drill's script.
var (
	drillSequences = []SequenceRule{
		{Match: DrillTransientMarker, Sequence: "503,503,503,200"},
		{Match: DrillNotFoundMarker, Sequence: "404"},
	}
	drillPoison = []PoisonRule{{Match: DrillTooLongMarker, Kind: PoisonContextLength}}
)

// WithDrill returns f with the drill's script added. A drill marker that
// f already scripts (a sequence or poison rule whose Match is the marker)
// keeps f's script: that is how a faults file changes the drill.
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
