package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/platform/config"
)

// Settings are a service binary's settings: registered on a loader as
// flags and environment variables, then validated once parsed.
type Settings interface {
	Register(l *config.Loader)
	Validate() error
}

// Load parses args, over the environment read through lookup, into s and
// validates it. A mistake in either is a usage error (exit status 2),
// and usage goes to stderr. It returns the arguments left after the
// flags.
func Load(name string, args []string, lookup func(string) (string, bool), stderr io.Writer, s Settings) ([]string, error) {
	l := config.NewLoader(name, lookup)
	l.FlagSet().SetOutput(stderr)
	s.Register(l)
	rest, err := l.Parse(args)
	if err != nil {
		return nil, UsageError(err)
	}
	if err := s.Validate(); err != nil {
		return nil, UsageError(err)
	}
	return rest, nil
}

// Main is a long-running service binary's main: it runs run until
// SIGINT or SIGTERM ends its context, prints a failure on stderr under
// the binary's name, and exits with ExitCode's status.
func Main(name string, run func(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stderr)
	stop()
	code := ExitCode(err)
	if code != 0 {
		fmt.Fprintln(os.Stderr, name+":", err)
	}
	os.Exit(code)
}
