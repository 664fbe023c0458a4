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
)

// NATS is a running nats-server with JetStream. A local one can be killed
// with SIGKILL and restarted on the same port and store directory.
type NATS struct {
	// URL is the client URL, nats://127.0.0.1:<port>.
	URL string

	proc      *process
	terminate func(ctx context.Context) error // containers only
}

// StartLocalNATS starts the nats-server binary at bin with JetStream on,
// storing under dir, on a free loopback port.
func StartLocalNATS(ctx context.Context, bin, dir string) (*NATS, error) {
	store := filepath.Join(dir, "jetstream")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// max_payload has no command-line flag; it is set explicitly, to the
	// size every stream's MaxMsgSize is declared with.
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("max_payload: %d\n", broker.MaxPayload)), 0o644); err != nil {
		return nil, err
	}
	n := &NATS{
		URL: fmt.Sprintf("nats://127.0.0.1:%d", port),
		proc: &process{
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
		},
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
	return n.proc.waitFor(30*time.Second, func() error { return jetStreamReady(n.URL) })
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

func jetStreamReady(url string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	// $JS.API.INFO answers only once JetStream has recovered its store.
	_, err = nc.Request("$JS.API.INFO", nil, time.Second)
	return err
}
