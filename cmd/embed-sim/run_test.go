package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/tokens"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

func TestRunServesUntilCanceled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	faults := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(faults, []byte(`{"sequences":[{"match":"flaky","sequence":"503,200"}],"rate_429":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reqLog := filepath.Join(dir, "requests.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--dims", "8", "--faults", faults, "--rate-429", "0", "--request-log", reqLog}, &stdout, &stderr)
	}()

	var url string
	deadline := time.Now().Add(5 * time.Second)
	for url == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no URL on stdout; stderr: %s", stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v; stderr: %s", err, stderr.String())
		default:
		}
		url = strings.TrimSpace(stdout.String())
		time.Sleep(5 * time.Millisecond)
	}

	statusOf := func(input string) int {
		resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(`{"model":"m","input":["`+input+`"]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	// The file's sequence applies; its rate_429 is overridden by the flag.
	if got := []int{statusOf("flaky"), statusOf("flaky"), statusOf("steady")}; got[0] != 503 || got[1] != 200 || got[2] != 200 {
		t.Errorf("statuses %v, want [503 200 200]", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	if !strings.Contains(stderr.String(), `"message":"listening"`) || !strings.Contains(stderr.String(), `"message":"stopped"`) {
		t.Errorf("logs lack listening/stopped lines: %s", stderr.String())
	}
	data, err := os.ReadFile(reqLog)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(data), "\n"); lines != 3 {
		t.Errorf("request log has %d lines, want 3:\n%s", lines, data)
	}
	if strings.Contains(string(data), "steady") || strings.Contains(stderr.String(), "steady") {
		t.Error("input text leaked into the request log or the logs")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--latency", "sometimes"},
		{"--rate-429", "2"},
		{"--dims", "0"},
		{"--quota-rpm", "-1"},
		{"--log-level", "chatty"},
		{"extra"},
	} {
		// A canceled context makes run return at once should the flags be
		// accepted after all.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := run(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), io.Discard, io.Discard)
		if !errors.Is(err, errUsage) || exitCode(err) != 2 {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := run(ctx, []string{"--addr", "127.0.0.1:0", "--faults", filepath.Join(t.TempDir(), "missing.json")}, io.Discard, io.Discard); err == nil || exitCode(err) != 1 {
		t.Errorf("missing faults file: %v", err)
	}
}

func TestFlagsOverrideFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(path, []byte(`{"rate_5xx":0.5,"latency":"fixed:1ms","max_input_chars":10}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := parseFlags([]string{"--faults", path, "--max-input-chars", "99", "--outage-duration", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f := s.cfg.Faults
	want := embedsim.Latency{Dist: embedsim.LatencyFixed, Value: time.Millisecond}
	if f.Rate5xx != 0.5 || f.Latency != want || f.MaxInputChars != 99 || f.OutageDuration != time.Minute {
		t.Errorf("faults %+v", f)
	}
}

func TestLimitFlags(t *testing.T) {
	t.Parallel()
	s, err := parseFlags([]string{"--quota-rpm", "500", "--quota-tpm", "1000000", "--max-input-tokens", "512", "--max-request-tokens", "-1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (embedsim.Quota{RequestsPerMinute: 500, TokensPerMinute: 1_000_000}); s.cfg.Quota != want || s.cfg.MaxInputTokens != 512 || s.cfg.MaxRequestTokens != -1 {
		t.Errorf("quota %+v, max input tokens %d, max request tokens %d", s.cfg.Quota, s.cfg.MaxInputTokens, s.cfg.MaxRequestTokens)
	}
	if s, err = parseFlags(nil, io.Discard); err != nil || s.cfg.Quota != (embedsim.Quota{}) || s.cfg.MaxInputTokens != tokens.DefaultMaxInputTokens || s.cfg.MaxRequestTokens != tokens.DefaultMaxRequestTokens {
		t.Errorf("defaults: quota %+v, max input tokens %d, max request tokens %d (%v)", s.cfg.Quota, s.cfg.MaxInputTokens, s.cfg.MaxRequestTokens, err)
	}
}
