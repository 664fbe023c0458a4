package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/migrations"
)

// Common holds the settings every service shares (design §8).
type Common struct {
	// DatabaseURL is the PostgreSQL URL; TLS settings (sslmode, sslrootcert,
	// sslcert, sslkey) pass through it. Defaults to a local database.
	DatabaseURL string
	// NATSURL is the NATS server list; a user and password go in it
	// (nats://producer:secret@host:4222). Defaults to nats://127.0.0.1:4222.
	NATSURL string
	// NATSCreds is a NATS credentials file. Defaults to none.
	NATSCreds string
	// NATSTLSCA, NATSTLSCert and NATSTLSKey configure TLS to NATS.
	NATSTLSCA, NATSTLSCert, NATSTLSKey string
	// MetricsAddr serves /metrics, /healthz and /readyz. Defaults per service.
	MetricsAddr string
	// LogLevel is debug, info, warn or error. Defaults to info.
	LogLevel string
	// LogFormat is json, console or auto (console on a terminal). Defaults
	// to auto.
	LogFormat string
	// EmbeddingDims is the vector dimension. Defaults to 384.
	EmbeddingDims int
	// SQLTimeout bounds each SQL statement: the client gives up on an
	// answer after it (a silent connection included), and the server's
	// statement_timeout stops the work. Defaults to DefaultSQLTimeout.
	SQLTimeout time.Duration
	// NATSPingInterval is how often the client pings NATS; two unanswered
	// pings mark the connection stale and it reconnects. Defaults to
	// DefaultNATSPingInterval.
	NATSPingInterval time.Duration
	// Demo accepts the shipped default passwords and short ones in
	// DATABASE_URL and NATS_URL (see CheckPassword). Defaults to false.
	Demo bool
}

// Defaults of Common.
const (
	// DefaultSQLTimeout is the default Common.SQLTimeout.
	DefaultSQLTimeout = 30 * time.Second
	// DefaultDatabaseURL is a local database named sluice.
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/sluice?sslmode=disable"
	// DefaultNATSURL is a local NATS server.
	DefaultNATSURL = "nats://127.0.0.1:4222"
	// DefaultLogLevel is the default Common.LogLevel.
	DefaultLogLevel = "info"
	// DefaultLogFormat is the default Common.LogFormat.
	DefaultLogFormat = "auto"
	// DefaultEmbeddingDims is the default Common.EmbeddingDims, the
	// dimension the migrations create by default.
	DefaultEmbeddingDims = migrations.DefaultDims
)

// RegisterCommon registers the shared settings. metricsAddr is the
// service's default listen address.
func RegisterCommon(l *Loader, c *Common, metricsAddr string) {
	RegisterDatabase(l, c)
	RegisterNATS(l, c)
	l.String(&c.MetricsAddr, "metrics-addr", "METRICS_ADDR", metricsAddr, "listen address for /metrics, /healthz and /readyz (empty disables)")
	l.String(&c.LogLevel, "log-level", "LOG_LEVEL", DefaultLogLevel, "log level: debug, info, warn, error")
	l.String(&c.LogFormat, "log-format", "LOG_FORMAT", DefaultLogFormat, "log format: json, console, auto (console on a terminal)")
	l.Int(&c.EmbeddingDims, "embedding-dims", "EMBEDDING_DIMS", DefaultEmbeddingDims, "embedding vector dimension")
	l.Duration(&c.SQLTimeout, "sql-timeout", "SQL_TIMEOUT", DefaultSQLTimeout, "bound of each SQL statement, client wait and server work (statement_timeout)")
	RegisterDemo(l, &c.Demo)
}

// RegisterDemo registers the setting that accepts weak passwords, for
// demos and local stacks.
func RegisterDemo(l *Loader, demo *bool) {
	l.Bool(demo, "demo", DemoEnv, false, "a demo or local stack: accept the shipped default passwords and short ones")
}

// RegisterDatabase registers the PostgreSQL URL, for services and the CLI.
func RegisterDatabase(l *Loader, c *Common) {
	l.String(&c.DatabaseURL, "database-url", "DATABASE_URL", DefaultDatabaseURL, "PostgreSQL URL (TLS via sslmode/sslrootcert/sslcert/sslkey)")
}

// RegisterNATS registers how to reach NATS — servers, credentials, TLS —
// for services and the CLI alike.
func RegisterNATS(l *Loader, c *Common) {
	l.String(&c.NATSURL, "nats-url", "NATS_URL", DefaultNATSURL, "NATS server URL(s), comma-separated; credentials as nats://user:password@host:port")
	l.String(&c.NATSCreds, "nats-creds", "NATS_CREDS", "", "NATS credentials file")
	l.String(&c.NATSTLSCA, "nats-tls-ca", "NATS_TLS_CA", "", "CA certificate for TLS to NATS")
	l.String(&c.NATSTLSCert, "nats-tls-cert", "NATS_TLS_CERT", "", "client certificate for TLS to NATS")
	l.String(&c.NATSTLSKey, "nats-tls-key", "NATS_TLS_KEY", "", "client key for TLS to NATS")
	l.Duration(&c.NATSPingInterval, "nats-ping-interval", "NATS_PING_INTERVAL", DefaultNATSPingInterval, "how often to ping NATS; two unanswered pings mark the connection stale and it reconnects")
}

// Validate reports every problem at once, each with how to fix it.
func (c Common) Validate() error {
	var errs []error
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		errs = append(errs, fmt.Errorf("DATABASE_URL %q: want postgres://user@host:port/db", Redact(c.DatabaseURL)))
	}
	if err := c.ValidateNATS(); err != nil {
		errs = append(errs, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL %q: use debug, info, warn or error", c.LogLevel))
	}
	switch c.LogFormat {
	case "json", "console", "auto":
	default:
		errs = append(errs, fmt.Errorf("LOG_FORMAT %q: use json, console or auto", c.LogFormat))
	}
	if c.EmbeddingDims < 1 || c.EmbeddingDims > 16000 {
		errs = append(errs, fmt.Errorf("EMBEDDING_DIMS %d: set it to the model's output size (1..16000)", c.EmbeddingDims))
	}
	if c.SQLTimeout <= 0 || c.NATSPingInterval <= 0 {
		errs = append(errs, fmt.Errorf("SQL_TIMEOUT %s and NATS_PING_INTERVAL %s: use positive durations", c.SQLTimeout, c.NATSPingInterval))
	}
	if !c.Demo {
		errs = append(errs, checkURLPasswords("DATABASE_URL", c.DatabaseURL), checkURLPasswords("NATS_URL", c.NATSURL))
	}
	return errors.Join(errs...)
}

// ValidateNATS reports problems with the NATS settings alone, for
// commands that take no others.
func (c Common) ValidateNATS() error {
	var errs []error
	for _, s := range strings.Split(c.NATSURL, ",") {
		if u, err := url.Parse(strings.TrimSpace(s)); err != nil || u.Host == "" {
			errs = append(errs, fmt.Errorf("NATS_URL %q: want nats://user:password@host:port (comma-separated for a cluster)", Redact(s)))
		}
	}
	if (c.NATSTLSCert == "") != (c.NATSTLSKey == "") {
		errs = append(errs, errors.New("NATS_TLS_CERT and NATS_TLS_KEY go together: set both or neither"))
	}
	return errors.Join(errs...)
}

// DefaultNATSPingInterval is the default NATSPingInterval. nats.go's own
// default, two minutes, leaves a client on a silently dead connection for
// up to six; this finds one within half a minute.
const DefaultNATSPingInterval = 10 * time.Second
