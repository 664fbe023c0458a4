package embedder

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RateLimit is what a provider reports of one of its allowances in its
// x-ratelimit-* headers.
type RateLimit struct {
	// Limit is the allowance a minute; 0 when the provider did not say.
	Limit int
	// Remaining is what is left of it now.
	Remaining int
	// Reset is how long until the allowance is whole again.
	Reset time.Duration
}

// RateLimits are a provider's x-ratelimit-* headers on one answer:
// x-ratelimit-limit-requests, x-ratelimit-remaining-requests and
// x-ratelimit-reset-requests, and the same for tokens.
type RateLimits struct {
	Requests, Tokens RateLimit
}

// parseRateLimits reads the headers, and reports whether they hold any
// allowance. An allowance whose headers are missing or malformed is left
// zero: no information is better than wrong information.
func parseRateLimits(h http.Header) (RateLimits, bool) {
	rl := RateLimits{Requests: parseRateLimit(h, "requests"), Tokens: parseRateLimit(h, "tokens")}
	return rl, rl.Requests.Limit > 0 || rl.Tokens.Limit > 0
}

func parseRateLimit(h http.Header, kind string) RateLimit {
	limit, err1 := strconv.Atoi(strings.TrimSpace(h.Get("X-Ratelimit-Limit-" + kind)))
	remaining, err2 := strconv.Atoi(strings.TrimSpace(h.Get("X-Ratelimit-Remaining-" + kind)))
	reset, err3 := time.ParseDuration(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + kind)))
	if err1 != nil || err2 != nil || err3 != nil || limit <= 0 || remaining < 0 || reset < 0 {
		return RateLimit{}
	}
	return RateLimit{Limit: limit, Remaining: min(remaining, limit), Reset: reset}
}
