package service_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/migrations"
)

// A service whose metrics address is taken fails to start with an error
// that names METRICS_ADDR, having released what it had opened.
func TestStartReportsATakenMetricsAddress(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := config.Common{
		DatabaseURL: db.RoleURL(migrations.ConsumerRole), NATSURL: config.DefaultNATSURL, MetricsAddr: taken.Addr().String(),
		LogLevel: config.DefaultLogLevel, LogFormat: "json", EmbeddingDims: config.DefaultEmbeddingDims,
		SQLTimeout: config.DefaultSQLTimeout, NATSPingInterval: broker.DefaultPingInterval,
	}
	var stderr bytes.Buffer
	rt, err := service.Start(t.Context(), "test", c, service.StartConfig{NoNATS: true}, &stderr)
	if err == nil {
		rt.Close()
		t.Fatal("Start served on a taken address")
	}
	if !strings.Contains(err.Error(), "METRICS_ADDR "+taken.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Start: %v, want METRICS_ADDR %s and the cause", err, taken.Addr())
	}
}

// A service answers /readyz ready only once it says it has started: until
// then it may still be joining what it needs, and a supervisor must not
// take it for one that does its work.
func TestReadyOnlyOnceStarted(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()
	c := config.Common{
		DatabaseURL: db.RoleURL(migrations.ConsumerRole), NATSURL: config.DefaultNATSURL, MetricsAddr: addr,
		LogLevel: config.DefaultLogLevel, LogFormat: "json", EmbeddingDims: config.DefaultEmbeddingDims,
		SQLTimeout: config.DefaultSQLTimeout, NATSPingInterval: broker.DefaultPingInterval,
	}
	var stderr bytes.Buffer
	rt, err := service.Start(t.Context(), "test", c, service.StartConfig{NoNATS: true}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ready := func() (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, `"started":"unavailable"`) {
		t.Errorf("/readyz before Started: %d %s, want 503 naming started", code, body)
	}
	rt.Started()
	if code, body := ready(); code != http.StatusOK {
		t.Errorf("/readyz once started: %d %s, want 200", code, body)
	}
}
