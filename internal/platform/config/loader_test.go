package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/config"
)

func TestFlagsOverEnvOverDefaults(t *testing.T) {
	t.Parallel()
	env := map[string]string{"NATS_URL": "nats://env:4222", "LOG_LEVEL": "debug", "EMBEDDING_DIMS": "768", "SIZE": "8589934592"}
	l := config.NewLoader("svc", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	var c config.Common
	config.RegisterCommon(l, &c, ":9100")
	var wait time.Duration
	l.Duration(&wait, "wait", "WAIT", 3*time.Second, "a wait")
	var size int64
	l.Int64(&size, "size", "SIZE", 1<<20, "a size past 32 bits")
	if _, err := l.Parse([]string{"--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "warn" {
		t.Errorf("flag must win over env: LogLevel=%q", c.LogLevel)
	}
	if c.NATSURL != "nats://env:4222" || c.EmbeddingDims != 768 || size != 8<<30 {
		t.Errorf("env must win over default: NATSURL=%q dims=%d size=%d", c.NATSURL, c.EmbeddingDims, size)
	}
	if c.MetricsAddr != ":9100" || wait != 3*time.Second {
		t.Errorf("defaults not applied: metrics=%q wait=%s", c.MetricsAddr, wait)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

func TestBadEnvironmentValueNamesTheVariable(t *testing.T) {
	t.Parallel()
	l := config.NewLoader("svc", func(k string) (string, bool) { return "lots", k == "EMBEDDING_DIMS" })
	var c config.Common
	config.RegisterCommon(l, &c, "")
	_, err := l.Parse(nil)
	if err == nil || !strings.Contains(err.Error(), "EMBEDDING_DIMS") || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("err = %v; want it to name EMBEDDING_DIMS and say what is wrong", err)
	}
}

func TestValidateSaysHowToFix(t *testing.T) {
	t.Parallel()
	l := config.NewLoader("svc", func(string) (string, bool) { return "", false })
	var c config.Common
	config.RegisterCommon(l, &c, "")
	if _, err := l.Parse([]string{"--database-url", "mysql://x", "--log-format", "xml", "--embedding-dims", "0", "--nats-tls-cert", "c.pem"}); err != nil {
		t.Fatal(err)
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"DATABASE_URL", "want postgres://", "LOG_FORMAT", "json, console or auto", "EMBEDDING_DIMS", "NATS_TLS_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestRedactHidesPasswords(t *testing.T) {
	t.Parallel()
	got := config.Redact("postgres://app:s3cret@db:5432/sluice")
	if strings.Contains(got, "s3cret") {
		t.Fatalf("Redact leaked the password: %s", got)
	}
}
