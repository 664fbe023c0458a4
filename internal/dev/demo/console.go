package demo

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ops/console"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// demoPrincipal holds the demo console's operator token.
const demoPrincipal = "demo-operator"

// serveConsole serves the triage console from the demo process on a free
// loopback port until ctx is done, with a fresh operator token, and prints
// a sign-in link that carries a one-time code, never the token. It
// returns once the console listens.
func serveConsole(ctx context.Context, pool *pgxpool.Pool, nats broker.ConnConfig, stdout io.Writer) (stop func(), err error) {
	nc, js, err := broker.Connect(nats, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	srv, err := console.New(console.Config{Tokens: []console.Token{{Principal: demoPrincipal, Role: console.Operator, Secret: console.NewSecret()}}}, pool, js)
	if err != nil {
		nc.Close()
		return nil, err
	}
	code, err := srv.IssueCode(demoPrincipal)
	if err != nil {
		srv.Close()
		nc.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		nc.Close()
		return nil, fmt.Errorf("console listen: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	fmt.Fprintf(stdout, "  triage console: http://%s/login?code=%s (signs in once, within %s)\n", ln.Addr(), code, console.DefaultCodeTTL)
	return func() { cancel(); <-done; srv.Close(); nc.Close() }, nil
}
