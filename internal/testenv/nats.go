package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/natsauth"
)

// NATS is a running nats-server with JetStream that requires a user per
// role (internal/natsauth). A local one can be killed with SIGKILL and
// restarted on the same port and store directory.
type NATS struct {
	// URL is the client URL with the topology owner's credentials,
	// nats://owner:…@127.0.0.1:<port>: what tests use for their own
	// connection. Services started by tests take URLFor their role.
	URL string
	// TLS is set when the server requires TLS: the files a client needs.
	TLS *TLSFiles

	base      string                   // the URL without credentials
	passwords map[natsauth.Role]string // nil for a server given by NATS_URL
	proc      *process
	terminate func(ctx context.Context) error // containers only
}

// NATSOption adjusts a NATS server a test asks for.
type NATSOption func(*natsOptions)

type natsOptions struct{ tls bool }

// WithTLS makes the server require TLS with client certificates, from a
// CA generated for it; NATS.TLS holds the client's files.
func WithTLS() NATSOption { return func(o *natsOptions) { o.tls = true } }

// newAuthNATS is a server at base whose roles have fresh passwords.
func newAuthNATS(base string) *NATS {
	n := &NATS{base: base, passwords: map[natsauth.Role]string{}}
	for _, r := range natsauth.Roles() {
		n.passwords[r] = randomSuffix() + randomSuffix()
	}
	n.URL = n.URLFor(natsauth.Owner)
	return n
}

// externalNATS is the server NATS_URL names, used with the credentials
// that URL carries whatever the role.
func externalNATS(url string) *NATS { return &NATS{URL: url, base: url} }

// URLFor is the client URL carrying role's credentials. A server given by
// NATS_URL has only the credentials in that URL, which URLFor returns for
// every role.
func (n *NATS) URLFor(role natsauth.Role) string {
	if n.passwords == nil {
		return n.URL
	}
	return n.URLAt(role, n.base)
}

// URLAt is base — another address of this server, a proxy in front of it
// for example — carrying role's credentials.
func (n *NATS) URLAt(role natsauth.Role, base string) string {
	if n.passwords == nil {
		return base
	}
	return natsauth.URLWithUser(base, string(role), n.passwords[role])
}

// ConnConfig is how a client connects as role: its URL and TLS files.
func (n *NATS) ConnConfig(role natsauth.Role, name string) broker.ConnConfig {
	cfg := broker.ConnConfig{URL: n.URLFor(role), Name: name}
	if n.TLS != nil {
		cfg.TLSCA, cfg.TLSCert, cfg.TLSKey = n.TLS.CA, n.TLS.Cert, n.TLS.Key
	}
	return cfg
}

// Env is the environment a Sluice process connects as role with:
// NATS_URL, and the NATS_TLS_* files when the server requires TLS.
func (n *NATS) Env(role natsauth.Role) []string {
	env := []string{"NATS_URL=" + n.URLFor(role)}
	if n.TLS != nil {
		env = append(env, "NATS_TLS_CA="+n.TLS.CA, "NATS_TLS_CERT="+n.TLS.Cert, "NATS_TLS_KEY="+n.TLS.Key)
	}
	return env
}

// serverConfig is the configuration file's content for this server.
func (n *NATS) serverConfig(tls *natsauth.TLS) string {
	return natsauth.ServerConfig{Users: natsauth.UsersWith(func(r natsauth.Role) string { return n.passwords[r] }), TLS: tls}.Render()
}

// StartLocalNATS starts the nats-server binary at bin with JetStream on,
// storing under dir, on a free loopback port, with a user per role.
func StartLocalNATS(ctx context.Context, bin, dir string, opts ...NATSOption) (*NATS, error) {
	var o natsOptions
	for _, opt := range opts {
		opt(&o)
	}
	store := filepath.Join(dir, "jetstream")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := newAuthNATS(fmt.Sprintf("nats://127.0.0.1:%d", port))
	var tls *natsauth.TLS
	if o.tls {
		if n.TLS, tls, err = writeTLSFiles(filepath.Join(dir, "tls")); err != nil {
			return nil, err
		}
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(n.serverConfig(tls)), 0o600); err != nil {
		return nil, err
	}
	n.proc = &process{
		name: "nats-server",
		path: bin,
		args: []string{
			"-c", conf,
			"-a", "127.0.0.1", "-p", strconv.Itoa(port),
			"-js", "-sd", store,
			// No monitoring port: tests talk to the server only as clients.
			"-m", "0",
		},
		logPath: filepath.Join(dir, "nats-server.log"),
	}
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// Start starts a stopped server and waits until JetStream answers.
func (n *NATS) Start(ctx context.Context) error {
	if n.proc == nil {
		return fmt.Errorf("start nats-server: %w", n.notLocal())
	}
	if err := n.proc.start(); err != nil {
		return err
	}
	return n.proc.waitFor(30*time.Second, n.jetStreamReady)
}

// Kill stops the server with SIGKILL: no flush, no goodbye to clients.
func (n *NATS) Kill(ctx context.Context) error {
	if n.proc == nil {
		return fmt.Errorf("kill nats-server: %w", n.notLocal())
	}
	return n.proc.kill()
}

// Restart is Kill followed by Start on the same store.
func (n *NATS) Restart(ctx context.Context) error {
	if err := n.Kill(ctx); err != nil {
		return err
	}
	return n.Start(ctx)
}

func (n *NATS) stop() error {
	if n.terminate != nil {
		return n.terminate(context.Background())
	}
	if n.proc == nil {
		return nil
	}
	return n.proc.kill()
}

func (n *NATS) notLocal() error {
	if n.terminate != nil {
		return errContainerCrash
	}
	return errNotLocal
}

// connect opens a plain connection as the owner, for testenv's own checks.
func (n *NATS) connect(opts ...nats.Option) (*nats.Conn, error) {
	if n.TLS != nil {
		opts = append(opts, nats.RootCAs(n.TLS.CA), nats.ClientCert(n.TLS.Cert, n.TLS.Key))
	}
	return nats.Connect(n.URL, opts...)
}

func (n *NATS) jetStreamReady() error {
	nc, err := n.connect(nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	// $JS.API.INFO answers only once JetStream has recovered its store.
	_, err = nc.Request("$JS.API.INFO", nil, time.Second)
	return err
}
