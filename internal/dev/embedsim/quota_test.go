package embedsim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
)

func checkHeaders(t *testing.T, what string, r testReply, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// The organisation quota is shared by every client: past its requests a
// minute the server answers 429 with Retry-After until the bucket has
// refilled enough, and every answer carries OpenAI's x-ratelimit-*
// headers.
func TestQuotaRequestsPerMinute(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartTest(t, Config{Quota: Quota{RequestsPerMinute: 3, TokensPerMinute: 1000}}, WithClock(clock.Now))
	req := map[string]any{"model": "text-embedding-3-small", "input": "hello world"} // 2 tokens

	first := mustPost(t, s.URL(), req)
	if first.status != http.StatusOK {
		t.Fatalf("first request: status %d: %s", first.status, first.body)
	}
	checkHeaders(t, "first request", first, map[string]string{
		"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "2", "x-ratelimit-reset-requests": "20s",
		"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "998", "x-ratelimit-reset-tokens": "120ms",
	})
	for i := range 2 {
		if r := mustPost(t, s.URL(), req); r.status != http.StatusOK {
			t.Fatalf("request %d of 3: status %d", i+2, r.status)
		}
	}
	refused := mustPost(t, s.URL(), req)
	if e := apiErr(t, refused); refused.status != http.StatusTooManyRequests || deref(e.Error.Code) != "rate_limit_exceeded" ||
		!strings.Contains(e.Error.Message, "requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.") {
		t.Fatalf("fourth request: status %d, %s; want 429 on RPM", refused.status, refused.body)
	}
	checkHeaders(t, "the refused request", refused, map[string]string{
		"Retry-After": "20", "Retry-After-Ms": "20000",
		"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s", "x-ratelimit-remaining-tokens": "994",
	})
	clock.Advance(20 * time.Second)
	if r := mustPost(t, s.URL(), req); r.status != http.StatusOK {
		t.Fatalf("after the Retry-After: status %d: %s", r.status, r.body)
	}
	if c := s.Counts(); c.ByFault["quota"] != 1 || c.ByStatus["200"] != 4 {
		t.Errorf("counts %+v, want 4 answered and 1 refused by the quota", c)
	}
}

func TestQuotaTokensPerMinute(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartTest(t, Config{Quota: Quota{TokensPerMinute: 100}}, WithClock(clock.Now))
	req := map[string]any{"model": "text-embedding-3-small", "input": strings.Repeat("🎉", 20)} // 60 tokens

	ok := mustPost(t, s.URL(), req)
	checkHeaders(t, "first request", ok, map[string]string{
		"x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "40", "x-ratelimit-reset-tokens": "36s",
		"x-ratelimit-limit-requests": "",
	})
	refused := mustPost(t, s.URL(), req)
	if e := apiErr(t, refused); refused.status != http.StatusTooManyRequests || !strings.Contains(e.Error.Message, "tokens per min (TPM): Limit 100, Used 60, Requested 60") {
		t.Fatalf("second request: status %d, %s; want 429 on TPM", refused.status, refused.body)
	}
	// 20 tokens short, at 100 a minute: 12 seconds.
	checkHeaders(t, "the refused request", refused, map[string]string{"Retry-After": "12", "Retry-After-Ms": "12000", "x-ratelimit-remaining-tokens": "40"})
	clock.Advance(12 * time.Second)
	if r := mustPost(t, s.URL(), req); r.status != http.StatusOK {
		t.Fatalf("after the Retry-After: status %d: %s", r.status, r.body)
	}

	// An answer the quota did not decide carries the headers too.
	long := map[string]any{"model": "text-embedding-3-small", "input": strings.Repeat("🎉", 3000)}
	if r := mustPost(t, s.URL(), long); r.status != http.StatusBadRequest || r.header.Get("x-ratelimit-limit-tokens") != "100" {
		t.Errorf("an input over the context: status %d, headers %v", r.status, r.header)
	}
}

func TestNoQuotaNoHeaders(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{})
	r := mustPost(t, s.URL(), embedReq("hello"))
	if r.status != http.StatusOK || r.header.Get("x-ratelimit-limit-requests") != "" || r.header.Get("x-ratelimit-limit-tokens") != "" {
		t.Errorf("an unlimited server: status %d, headers %v", r.status, r.header)
	}
}
