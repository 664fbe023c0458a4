package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/telemetry"
)

func TestServerEndpoints(t *testing.T) {
	t.Parallel()
	reg := telemetry.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_test_things_total", Help: "things"})
	reg.MustRegister(c)
	c.Add(3)
	// The postgres check dials a real port that stops listening.
	dep, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	depAddr := dep.Addr().String()
	logs := make(logLines, 64)
	srv := telemetry.NewServer(reg, zerolog.New(logs), telemetry.Check{Name: "postgres", Fn: func(ctx context.Context) error {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", depAddr)
		if err != nil {
			return err
		}
		return conn.Close()
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
	if err := dep.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := get("/readyz")
	var result map[string]string
	_ = json.Unmarshal([]byte(body), &result)
	if code != http.StatusServiceUnavailable || result["postgres"] != telemetry.Unavailable {
		t.Fatalf("/readyz with postgres down: %d %q; want 503 and postgres: unavailable", code, body)
	}
	if strings.Contains(body, depAddr) || strings.Contains(body, "refused") {
		t.Errorf("/readyz serves the raw error: %q", body)
	}
	logged, seen := false, ""
	for len(logs) > 0 {
		raw := <-logs
		seen += raw
		var line struct{ Level, Check, Error string }
		_ = json.Unmarshal([]byte(raw), &line)
		logged = logged || (line.Level == "warn" && line.Check == "postgres" && strings.Contains(line.Error, depAddr))
	}
	if !logged {
		t.Errorf("the failure's detail is not logged at warn: %q", seen)
	}
}

// logLines passes each log line written from the server's goroutines to
// the test.
type logLines chan string

func (c logLines) Write(p []byte) (int, error) {
	c <- string(p)
	return len(p), nil
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
