package classify

import "slices"

// ExhaustedTransientClasses returns the classes of a chunk parked because
// a transient budget ran out: transient_exhausted and timeout_exhausted.
// The chunk was not at fault, the provider or the network was: the
// replayer re-embeds these once their next_retry_at has passed, and a
// spike made of them points at the provider, not at a source.
func ExhaustedTransientClasses() []string {
	return []string{ClassTransientExhausted, ClassTimeoutExhausted}
}

// IsExhaustedTransient reports whether class is one of
// ExhaustedTransientClasses.
func IsExhaustedTransient(class string) bool {
	return slices.Contains(ExhaustedTransientClasses(), class)
}
