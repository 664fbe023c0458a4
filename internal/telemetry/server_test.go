package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/telemetry"
)

func TestServerEndpoints(t *testing.T) {
	t.Parallel()
	reg := telemetry.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_test_things_total", Help: "things"})
	reg.MustRegister(c)
	c.Add(3)
	var down atomic.Bool
	srv := telemetry.NewServer(reg, zerolog.Nop(), telemetry.Check{Name: "postgres", Fn: func(context.Context) error {
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := srv.Serve(ctx, l)
	t.Cleanup(func() {
		cancel()
		if err := wait(); err != nil {
			t.Error(err)
		}
	})
	base := "http://" + l.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "sluice_test_things_total 3") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz while ready: %d", code)
	}
	down.Store(true)
	code, body := get("/readyz")
	var result map[string]string
	_ = json.Unmarshal([]byte(body), &result)
	if code != http.StatusServiceUnavailable || result["postgres"] != "connection refused" {
		t.Fatalf("/readyz with postgres down: %d %q", code, body)
	}
}

func TestLoggerWritesJSONWithService(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := telemetry.NewLogger(&buf, "consumer", "info", "auto")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hidden")
	log.Info().Str("doc_id", "d1").Msg("stored")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if line["service"] != "consumer" || line["doc_id"] != "d1" || line["level"] != "info" {
		t.Fatalf("line = %v", line)
	}
	if _, err := telemetry.NewLogger(&buf, "x", "loud", "json"); err == nil {
		t.Fatal("bad level accepted")
	}
}
