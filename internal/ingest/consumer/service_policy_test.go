package consumer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// settings loads the consumer's settings from env alone.
func settings(t *testing.T, env map[string]string) *consumer.ServiceConfig {
	t.Helper()
	l := config.NewLoader("consumer", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	var cfg consumer.ServiceConfig
	cfg.Register(l)
	if _, err := l.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// Flags and environment give the policy's defaults; the file overrides
// them per source; a bad file stops the service before it connects,
// naming the file and line.
func TestPolicyFileOverFlagsAndEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("sources:\n  fast:\n    max_deliveries: 2\n    ambiguous_retries: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := settings(t, map[string]string{"POLICY_FILE": good, "MAX_DELIVERIES": "7", "BACKOFF_BASE": "3s", "RATE_REQUESTS_PER_MINUTE": "600"})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	table, err := cfg.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if s := table.For("other"); s.MaxDeliveries != 7 || s.BackoffBase != 3*time.Second || s.RequestsPerMinute != 600 {
		t.Errorf("default from the environment: %+v", s)
	}
	if s := table.For("fast"); s.MaxDeliveries != 2 || s.BackoffBase != 3*time.Second {
		t.Errorf("source section: %+v", s)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("default:\n  max_deliverys: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = settings(t, map[string]string{"POLICY_FILE": bad}).Validate()
	if err == nil || !strings.Contains(err.Error(), bad+":2:") || !strings.Contains(err.Error(), "max_deliverys") {
		t.Fatalf("bad policy file: err = %v; want it named with its line", err)
	}
}
