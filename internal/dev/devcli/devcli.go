package devcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/platform/config"
)

// Env is what a command runs with.
type Env struct {
	Stdout, Stderr io.Writer
	// Lookup reads the environment; nil means an empty one.
	Lookup func(string) (string, bool)
}

func (e Env) lookup() func(string) (string, bool) {
	if e.Lookup != nil {
		return e.Lookup
	}
	return func(string) (string, bool) { return "", false }
}

// errUsage marks a command-line mistake; the exit status is 2.
var errUsage = errors.New("usage")

// errFailed marks a command that ran and found what it checks broken,
// having said so in its report; the exit status is 1.
var errFailed = errors.New("failed")

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"demo":  {"run the whole system on this machine on a sample corpus, failures included, and report (needs go and PostgreSQL's server binaries)", runDemo},
		"up":    {"start PostgreSQL, NATS and every service on this machine for your own documents, in a directory kept between runs, and print the environment to export", runUp},
		"down":  {"stop the stack `up` started; its data stays for the next up", runDown},
		"drill": {"run the classification drill against a running system whose embedder is embed-sim: three 503s then a 200, a permanent 404, an input too long; exit 1 if it fails", runDrill},
	}
}

// Run executes `sluice-dev args...` and returns the process exit status:
// 0 on success, 1 when the command failed, 2 on a usage mistake.
func Run(ctx context.Context, env Env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.Stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "sluice-dev: unknown command %q\n\n", args[0])
		usage(env.Stderr)
		return 2
	}
	switch err := cmd.run(ctx, env, args[1:]); {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(env.Stderr, "sluice-dev:", err)
		return 2
	default:
		fmt.Fprintln(env.Stderr, "sluice-dev:", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sluice-dev COMMAND [flags]\n\nDevelopment commands; the operator CLI is sluice.\n\nCommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-6s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice-dev COMMAND --help' for a command's flags.")
}

// newLoader returns a flag loader for "sluice-dev <name>".
func newLoader(env Env, name string) *config.Loader {
	l := config.NewLoader("sluice-dev "+name, env.lookup())
	l.FlagSet().SetOutput(env.Stderr)
	return l
}

// parse parses args, turning flag errors into usage errors and rejecting
// positional arguments, which no command takes.
func parse(l *config.Loader, args []string) error {
	rest, err := l.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return fmt.Errorf("%w: %v", errUsage, err)
	case len(rest) > 0:
		return fmt.Errorf("%w: %s takes no arguments, got %q (flags start with --)", errUsage, l.FlagSet().Name(), strings.Join(rest, " "))
	}
	return nil
}
