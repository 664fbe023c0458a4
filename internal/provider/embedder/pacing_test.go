package embedder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// pacingRun is one run of clients against a quota'd embed-sim.
type pacingRun struct {
	sim      *embedsim.Server
	requests int // that reached embed-sim from the clients
	refused  int // of them, answered 429 by the quota
	log      *bytes.Buffer
}

// runPacing drains the organisation's token allowance to 1,000 (a
// neighbour's big request, as another service of the organisation
// sends), then lets a client with an unconfigured budget embed perRun
// requests of about 100 tokens from workers goroutines. With fromHeaders
// the client paces from the x-ratelimit-* headers; without, it only sees
// the 429s.
func runPacing(t *testing.T, workers, perRun int, fromHeaders bool) pacingRun {
	t.Helper()
	const model, tpm = "text-embedding-3-small", 600_000 // 10,000 tokens a second
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 8, MaxInputTokens: -1, MaxRequestTokens: -1,
		Quota: embedsim.Quota{RequestsPerMinute: 60_000, TokensPerMinute: tpm}})
	body, _ := json.Marshal(map[string]any{"model": model, "input": strings.Repeat(" hello", tpm-1000)})
	resp, err := http.Post(sim.URL()+"/v1/embeddings", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("x-ratelimit-remaining-tokens") != "1000" {
		t.Fatalf("the neighbour's request: status %d, remaining tokens %q", resp.StatusCode, resp.Header.Get("x-ratelimit-remaining-tokens"))
	}
	run := pacingRun{sim: sim, log: &bytes.Buffer{}}
	budget := embedder.NewBudget(0, 0, nil, zerolog.New(&lockedWriter{w: run.log}))
	cfg := embedder.Config{URL: sim.URL(), Model: model, Dims: 8}
	if fromHeaders {
		cfg.OnRateLimits = budget.Observe
	}
	client, err := embedder.NewResilient(newOpenAI(t, cfg), embedder.ResilientConfig{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perRun / workers {
				text := fmt.Sprintf("worker %d input %d:", w, i) + strings.Repeat(" hello", 90)
				if _, err := client.Embed(context.Background(), []string{text}); err != nil {
					t.Errorf("embed: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, r := range sim.Requests()[1:] {
		run.requests++
		if r.Fault == "quota" {
			run.refused++
		}
	}
	return run
}

// lockedWriter serialises a logger's writes for the test to read.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A client that paces from the provider's rate-limit headers adopts the
// organisation's token allowance, lower than its own (unlimited), says so
// once, and slows down before the provider refuses: under 1% of its
// requests are answered 429. A client that ignores the headers, and
// learns only from 429s, is refused far more often.
func TestPacingFromRateLimitHeaders(t *testing.T) {
	t.Parallel()
	const perRun = 300
	paced := runPacing(t, 3, perRun, true)
	if paced.requests < perRun || paced.refused*100 >= paced.requests {
		t.Errorf("pacing from the headers: %d of %d requests refused, want under 1%%", paced.refused, paced.requests)
	}
	if n := strings.Count(paced.log.String(), `"allowance":"tokens","configured_per_minute":0,"provider_per_minute":600000`); n != 1 {
		t.Errorf("the token allowance's adoption was logged %d times, want once: %s", n, paced.log.String())
	}
	blind := runPacing(t, 3, perRun, false)
	if blind.refused*100 < 5*blind.requests {
		t.Errorf("ignoring the headers: %d of %d requests refused, want at least 5%%: the quota does not bite", blind.refused, blind.requests)
	}
	t.Logf("refused: %d of %d pacing from the headers, %d of %d ignoring them", paced.refused, paced.requests, blind.refused, blind.requests)
}
