package netfault

import "time"

// Fault is one network fault: a Toxiproxy toxic applied to one or both
// directions of every connection through a proxy.
type Fault struct {
	// Name identifies the fault in logs and test names.
	Name string
	// Type is the Toxiproxy toxic type.
	Type string
	// Attributes are the toxic's attributes.
	Attributes map[string]any
	// Streams are the directions the toxic applies to: "downstream"
	// (server to client), "upstream" (client to server), or both.
	Streams []string
}

var both = []string{"upstream", "downstream"}

// Latency delays every chunk of data in both directions by latency, plus
// or minus up to jitter.
func Latency(latency, jitter time.Duration) Fault {
	return Fault{Name: "latency", Type: "latency", Streams: both,
		Attributes: map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()}}
}

// ResetPeer resets every connection with a TCP RST once after has passed
// since data first arrived on it: connections break mid-stream, and new
// ones break the same way until Heal.
func ResetPeer(after time.Duration) Fault {
	return Fault{Name: "reset_peer", Type: "reset_peer", Streams: []string{"upstream"},
		Attributes: map[string]any{"timeout": after.Milliseconds()}}
}

// Blackhole silently drops all data in both directions and keeps every
// connection open: clients see neither an error nor an answer, as behind a
// firewall that drops packets. New connections are accepted and then
// drained the same way. Healing closes the connections that were
// blackholed.
func Blackhole() Fault {
	return Fault{Name: "blackhole", Type: "timeout", Streams: both,
		Attributes: map[string]any{"timeout": 0}}
}

// Bandwidth limits each connection to kbPerSecond kilobytes a second in
// both directions.
func Bandwidth(kbPerSecond int) Fault {
	return Fault{Name: "bandwidth", Type: "bandwidth", Streams: both,
		Attributes: map[string]any{"rate": kbPerSecond}}
}
