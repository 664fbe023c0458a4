package simtype

// Markers of the classification drill (`sluice-dev drill`). An input
// holding one of them gets the drill's scripted answers when embed-sim
// runs with the drill's script (embedsim.Faults.WithDrill), which it does
// unless --no-drill is given, so a running system can be drilled without
// restarting its embedder.
const (
	// DrillTransientMarker is answered 503, 503, 503, then 200.
	DrillTransientMarker = "sluice-drill:503x3"
	// DrillNotFoundMarker is answered 404 on every request.
	DrillNotFoundMarker = "sluice-drill:404"
	// DrillTooLongMarker is answered 400 context_length_exceeded, as a
	// model answers an input longer than its context.
	DrillTooLongMarker = "sluice-drill:too-long"
)
