package localenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// NATS is a running nats-server with JetStream that requires a user per
// role (internal/platform/natsauth). A local one can be killed with SIGKILL and
// restarted on the same port and store directory.
type NATS struct {
	// URL is the client URL with the topology owner's credentials,
	// nats://owner:…@127.0.0.1:<port>: what the starter uses for its own
	// connection. Services it starts take URLFor their role.
	URL string
	// TLS is set when the server requires TLS: the files a client needs.
	TLS *TLSFiles

	base      string                   // the URL without credentials
	passwords map[natsauth.Role]string // nil for a server given by URL
	srv       *server
}

// NATSOption adjusts a NATS server StartLocalNATS starts.
type NATSOption func(*natsOptions)

type natsOptions struct{ tls, syncAlways bool }

// WithTLS makes the server require TLS with client certificates, from a
// CA generated for it; NATS.TLS holds the client's files.
func WithTLS() NATSOption { return func(o *natsOptions) { o.tls = true } }

// newAuthNATS is a server at base whose roles have fresh passwords.
func newAuthNATS(base string) *NATS {
	n := &NATS{base: base, passwords: map[natsauth.Role]string{}}
	for _, r := range natsauth.Roles() {
		n.passwords[r] = randomPassword()
	}
	n.URL = n.URLFor(natsauth.Owner)
	return n
}

// AttachNATS is the server at url, which this process does not run, used
// with the credentials url carries whatever the role. The crash helpers
// return ErrNotLocal.
func AttachNATS(url string) *NATS {
	return &NATS{URL: url, base: url, srv: attached("nats-server", nil)}
}

// HostNATS starts a nats-server that this process does not run as a child
// — in a container, say — with JetStream and a user per role. It writes
// the server's configuration to the file conf; run starts the server with
// that file and returns its client URL without credentials and a function
// that stops it. Close calls that function; the crash helpers return
// ErrNotLocal.
func HostNATS(ctx context.Context, conf string, run func(ctx context.Context, conf string) (url string, stop func(context.Context) error, err error)) (*NATS, error) {
	n := newAuthNATS("")
	if err := os.WriteFile(conf, []byte(n.serverConfig(nil)), 0o644); err != nil {
		return nil, err
	}
	base, stop, err := run(ctx, conf)
	if err != nil {
		return nil, err
	}
	n.base, n.srv = base, attached("nats-server", stop)
	n.URL = n.URLFor(natsauth.Owner)
	return n, nil
}

// URLFor is the client URL carrying role's credentials. A server given by
// URL (AttachNATS) has only the credentials in that URL, which URLFor
// returns for every role.
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

// WithSyncAlways sets JetStream's sync_interval to always: every write is
// flushed to disk before it is acknowledged, instead of every two minutes.
func WithSyncAlways() NATSOption { return func(o *natsOptions) { o.syncAlways = true } }

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
		var server *TLSFiles
		if n.TLS, server, err = WriteTLSFiles(filepath.Join(dir, "tls")); err != nil {
			return nil, err
		}
		tls = &natsauth.TLS{CA: server.CA, Cert: server.Cert, Key: server.Key}
	}
	conf := filepath.Join(dir, "nats.conf")
	content := n.serverConfig(tls)
	if o.syncAlways {
		// The store directory comes from -sd below; the file may not
		// name it again.
		content += "\njetstream {\n  sync_interval: always\n}\n"
	}
	if err := os.WriteFile(conf, []byte(content), 0o600); err != nil {
		return nil, err
	}
	n.srv = &server{cmd: Command{
		Name: "nats-server",
		Path: bin,
		Args: []string{
			"-c", conf,
			"-a", "127.0.0.1", "-p", strconv.Itoa(port),
			"-js", "-sd", store,
			// No monitoring port: clients are all the server has.
			"-m", "0",
		},
		Log:   filepath.Join(dir, "nats-server.log"),
		Group: true,
	}}
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// Start starts a stopped server and waits until JetStream answers.
func (n *NATS) Start(ctx context.Context) error {
	proc, err := n.srv.start()
	if err != nil {
		return err
	}
	return proc.WaitReady(30*time.Second, n.jetStreamReady)
}

// Kill stops the server with SIGKILL: no flush, no goodbye to clients.
func (n *NATS) Kill(ctx context.Context) error {
	return n.srv.kill()
}

// Restart is Kill followed by Start on the same store.
func (n *NATS) Restart(ctx context.Context) error {
	if err := n.Kill(ctx); err != nil {
		return err
	}
	return n.Start(ctx)
}

// Close stops the server (SIGKILL: its store is thrown away), for
// cleanup.
func (n *NATS) Close() error { return n.srv.close(syscall.SIGKILL, killWait) }

// Connect opens a plain connection as the topology owner.
func (n *NATS) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if n.TLS != nil {
		opts = append(opts, nats.RootCAs(n.TLS.CA), nats.ClientCert(n.TLS.Cert, n.TLS.Key))
	}
	return nats.Connect(n.URL, opts...)
}

func (n *NATS) jetStreamReady() error {
	nc, err := n.Connect(nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	// $JS.API.INFO answers only once JetStream has recovered its store.
	_, err = nc.Request("$JS.API.INFO", nil, time.Second)
	return err
}

// randomPassword is a fresh password for one role.
func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TLSRequested reports whether opts ask for TLS, which only StartLocalNATS
// offers.
func TLSRequested(opts ...NATSOption) bool {
	var o natsOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o.tls
}
