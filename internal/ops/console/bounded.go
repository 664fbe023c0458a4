package console

import "time"

// The in-memory tables (sessions, codes, login backoffs) are bounded:
// dropExpired forgets what expired, evictOldest what expires first
// until fewer than max remain.

func dropExpired[K comparable, V any](m map[K]V, now time.Time, expires func(V) time.Time) {
	for k, v := range m {
		if now.After(expires(v)) {
			delete(m, k)
		}
	}
}

func evictOldest[K comparable, V any](m map[K]V, max int, expires func(V) time.Time) {
	for len(m) >= max && len(m) > 0 {
		var oldest K
		var first time.Time
		found := false
		for k, v := range m {
			if !found || expires(v).Before(first) {
				oldest, first, found = k, expires(v), true
			}
		}
		delete(m, oldest)
	}
}
