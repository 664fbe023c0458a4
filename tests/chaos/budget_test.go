//go:build chaos

package chaos_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
)

// The organisation's quota embed-sim enforces, and the fleet budget the
// services are given: the same numbers, once for the whole fleet.
const (
	quotaRPM = 600
	quotaTPM = 1_000_000
)

// Invariant 12: four consumers and the dlq-replayer draw on one budget
// equal to the provider's organisation quota. Under saturated load the
// fleet goes at the quota, not beyond it; a killed consumer's share goes
// to the others, a joining one gets its share without a burst of 429s,
// and while NATS is gone every member paces to the budget divided by the
// members it last saw, or its own share if lower.
func TestFleetSharesOneQuota(t *testing.T) {
	f := newFleet(t, fleetOptions{
		sim: []string{"--quota-rpm", fmt.Sprint(quotaRPM), "--quota-tpm", fmt.Sprint(quotaTPM)},
		env: []string{fmt.Sprintf("RATE_REQUESTS_PER_MINUTE=%d", quotaRPM), fmt.Sprintf("RATE_TOKENS_PER_MINUTE=%d", quotaTPM),
			// Small requests and batches: the quota, not the corpus, sets
			// the pace, and every loop of every consumer waits for budget.
			"EMBED_MAX_INPUTS=4", "BATCH_SIZE=8"},
	})
	var consumers []*proc
	for range 4 {
		consumers = append(consumers, f.service("consumer"))
	}
	replayer := f.service("dlq-replayer")
	// About 5,400 chunks: more than the fleet embeds at the quota, four
	// inputs a request, in the test's two minutes.
	f.produce("quota", f.writeCorpus("q", 200, 200))

	// Every consumer waits for budget, the idle replayer keeps a floor.
	f.eventually(30*time.Second, "four hungry consumers to share the budget", func() bool {
		return f.allShares(consumers, func(s float64) bool { return s > 0.23 && s <= 0.25 })
	})
	if s := f.metric(replayer, "sluice_budget_share_ratio"); s > 0.05 {
		t.Errorf("the idle replayer holds %.3f of the budget, want only a floor", s)
	}

	// Saturated load: the fleet goes at the quota, and never past it.
	const window = 45 * time.Second
	before := f.simCounts()
	start := time.Now()
	f.waitFor(window)
	after := f.simCounts()
	ok, refused := accepted(before, after)
	perQuota := ok / (time.Since(start).Minutes() * quotaRPM)
	t.Logf("saturated %s: %.0f requests accepted, %.0f refused (%.2f%%), %.3f of the quota", window, ok, refused, 100*refused/(ok+refused), perQuota)
	if perQuota < 0.9 || perQuota > 1.05 {
		t.Errorf("the fleet went at %.3f of the quota, want 0.9 to 1.05", perQuota)
	}
	if refused > 0.01*(ok+refused) {
		t.Errorf("%.0f of %.0f requests were refused 429, want under 1%%", refused, ok+refused)
	}

	// kill -9 of a consumer: its share goes to the three left.
	consumers[3].kill()
	killed := time.Now()
	consumers = consumers[:3]
	f.eventually(20*time.Second, "the others to take up the killed consumer's share", func() bool {
		return f.allShares(consumers, func(s float64) bool { return s > 0.3 })
	})
	takeover := time.Since(killed)
	t.Logf("share takeover after kill -9: %s", takeover.Round(100*time.Millisecond))
	if takeover > 15*time.Second {
		t.Errorf("the killed consumer's share came back after %s, want within 15s", takeover)
	}

	// A fifth member joins: every share shrinks, with no burst of 429s.
	before = f.simCounts()
	consumers = append(consumers, f.service("consumer"))
	joined := time.Now()
	f.eventually(20*time.Second, "shares to shrink for the new consumer", func() bool {
		return f.allShares(consumers, func(s float64) bool { return s > 0.23 && s <= 0.25 })
	})
	shrink := time.Since(joined)
	t.Logf("shares shrank %s after a consumer joined", shrink.Round(100*time.Millisecond))
	if shrink > 15*time.Second {
		t.Errorf("shares shrank %s after a consumer joined, want within 15s", shrink)
	}
	f.waitFor(5 * time.Second)
	ok, refused = accepted(before, f.simCounts())
	if refused > 0.01*(ok+refused) {
		t.Errorf("a joining consumer caused %.0f 429s in %.0f requests, want under 1%%", refused, ok+refused)
	}

	// NATS lost: each member falls back to the budget over the five
	// members it last saw, or its own share if lower, never to
	// unlimited: the hungry consumers to a fifth, the idle replayer
	// stays at its floor.
	if err := f.nats.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	members := append(append([]*proc(nil), consumers...), replayer)
	f.eventually(15*time.Second, "every consumer to fall back to a fifth of the budget, the replayer to keep its floor", func() bool {
		for _, p := range members {
			share := f.metric(p, "sluice_budget_share_ratio")
			want := 0.2
			if p == replayer {
				if share <= 0 || share > 0.05 {
					return false
				}
				want = share
			}
			if f.metric(p, "sluice_budget_coordinated") != 0 || math.Abs(share-want) > 1e-9 ||
				math.Abs(f.metric(p, `sluice_budget_share_per_second{resource="requests"}`)-quotaRPM/60.0*want) > 1e-9 {
				return false
			}
		}
		return true
	})
	if err := f.nats.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "members to coordinate again once NATS is back", func() bool {
		for _, p := range members {
			if f.metric(p, "sluice_budget_coordinated") != 1 {
				return false
			}
		}
		return true
	})
	f.eventually(10*time.Second, "no fleet budget overdrawn", f.budgetsWithin)
}

// allShares reports whether every one of procs reports a share that ok
// accepts.
func (f *fleet) allShares(procs []*proc, ok func(float64) bool) bool {
	for _, p := range procs {
		if !ok(f.metric(p, "sluice_budget_share_ratio")) {
			return false
		}
	}
	return true
}

// metric reads one series from a service's /metrics; NaN when it cannot.
func (f *fleet) metric(p *proc, series string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/metrics", nil)
	if err != nil {
		return math.NaN()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return math.NaN()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err == nil {
				return v
			}
		}
	}
	return math.NaN()
}

func (f *fleet) simCounts() embedsim.RequestCounts {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := embedsim.FetchCounts(ctx, f.simURL)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// accepted is how many requests embed-sim accepted and refused 429
// between two counts.
func accepted(before, after embedsim.RequestCounts) (ok, refused float64) {
	return float64(after.ByStatus["200"] - before.ByStatus["200"]), float64(after.ByStatus["429"] - before.ByStatus["429"])
}

// waitFor lets the fleet run for d: the load is what the test measures,
// so there is nothing to poll for.
func (f *fleet) waitFor(d time.Duration) {
	select {
	case <-time.After(d):
	case <-f.t.Context().Done():
	}
}
