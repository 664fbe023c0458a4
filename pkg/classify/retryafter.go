package classify

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfterCeiling bounds any Retry-After before maxDelay applies, so that
// an absurd header cannot overflow a time.Duration.
const retryAfterCeiling = 365 * 24 * time.Hour

// ParseRetryAfter reads an HTTP Retry-After header value, given either as
// delay-seconds or as an HTTP date, relative to now. The result is clamped
// to [0, maxDelay] (maxDelay <= 0 means no cap beyond one year); a date in
// the past yields 0. ok is false when the header is empty, negative or
// malformed, so callers fall back to their own backoff.
func ParseRetryAfter(value string, now time.Time, maxDelay time.Duration) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(value, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// An out-of-range count is still a well-formed, very long delay.
		if err != nil || secs > uint64(retryAfterCeiling/time.Second) {
			d = retryAfterCeiling
		} else {
			d = time.Duration(secs) * time.Second
		}
	} else {
		at, err := http.ParseTime(value)
		if err != nil {
			return 0, false
		}
		d = min(max(at.Sub(now), 0), retryAfterCeiling)
	}
	if maxDelay > 0 && d > maxDelay {
		d = maxDelay
	}
	return d, true
}
