package service_test

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/service"
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
