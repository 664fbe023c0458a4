package embedder

// BreakerState is the state of Resilient's circuit breaker.
type BreakerState int

// Breaker states.
const (
	// BreakerClosed lets every call through.
	BreakerClosed BreakerState = iota
	// BreakerOpen fails every call fast.
	BreakerOpen
	// BreakerHalfOpen lets a probe through; its outcome closes or reopens
	// the breaker.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open", the same names passed to
// ResilientConfig.OnStateChange.
func (s BreakerState) String() string {
	switch s {
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "closed"
}
