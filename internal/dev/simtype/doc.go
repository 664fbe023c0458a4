// Package simtype holds what embed-sim (internal/dev/embedsim) and its
// clients both speak beyond the OpenAI wire format: the markers of the
// classification drill, which embed-sim answers with the drill's script,
// and the shape of its request history (GET /debug/requests). It is a
// leaf, so that a client such as internal/dev/drill reads the simulator's
// answers without linking the simulator.
package simtype
