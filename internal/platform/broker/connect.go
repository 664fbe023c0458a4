package broker

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// ConnConfig says how to reach NATS. Credentials and TLS pass through to
// nats.go unchanged.
type ConnConfig struct {
	// URL is the server list, comma-separated.
	URL string
	// Name identifies the connection in the server's monitoring.
	Name string
	// Creds is a credentials file (JWT and NKey seed); empty for none.
	Creds string
	// TLSCA, TLSCert and TLSKey configure TLS; empty for none.
	TLSCA, TLSCert, TLSKey string
	// PingInterval is how often the client pings the server; two
	// unanswered pings mark the connection stale, and it reconnects.
	// Defaults to DefaultPingInterval.
	PingInterval time.Duration
}

// InboxPrefix is where a client connected as user receives replies —
// JetStream API answers, PubAcks and pulled messages: _INBOX.<user>, so
// that a server can let each user subscribe to its own replies only
// (internal/platform/natsauth does). It is empty, meaning nats.go's shared
// _INBOX, when there is no user or the name cannot be a subject token.
func InboxPrefix(user string) string {
	if user == "" || strings.ContainsAny(user, ".*> \t\r\n") {
		return ""
	}
	return nats.InboxPrefix + user
}

// DefaultPingInterval is the default ConnConfig.PingInterval, the
// settings' own (see config.DefaultNATSPingInterval).
const DefaultPingInterval = config.DefaultNATSPingInterval

// ConnConfigOf is how a process named name connects to NATS with the
// common settings c: the one place credentials and TLS reach the client.
func ConnConfigOf(c config.Common, name string) ConnConfig {
	return ConnConfig{URL: c.NATSURL, Name: name, Creds: c.NATSCreds,
		TLSCA: c.NATSTLSCA, TLSCert: c.NATSTLSCert, TLSKey: c.NATSTLSKey, PingInterval: c.NATSPingInterval}
}

// PubAckTimeout bounds the wait for one asynchronous publish's PubAck, so
// no publisher waits forever on a silent connection.
const PubAckTimeout = 10 * time.Second

// Connect opens a connection that reconnects forever once it is up: a
// broker restart is an outage to ride out, not a reason for a service to
// exit. The first connection is not retried: a server that refuses it,
// rejects the credentials or is not NATS is a setting to fix, and the
// error says which (nats.ErrNoServers wrapping the dial's error, such as
// syscall.ECONNREFUSED; nats.ErrAuthorization; a *SilentServerError).
func Connect(cfg ConnConfig, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	dial := newDialer()
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.SetCustomDialer(dial),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.PingInterval(cmp.Or(cfg.PingInterval, DefaultPingInterval)),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn().Err(err).Msg("nats disconnected")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("nats reconnected")
		}),
		// A permissions violation arrives on its own, apart from the
		// request it refused, which then only times out.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Error().Err(err).Msg("nats reported an error")
		}),
	}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if prefix := InboxPrefix(config.UserOf(cfg.URL)); prefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats: %w", dial.explain(err))
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(PubAckTimeout))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}
