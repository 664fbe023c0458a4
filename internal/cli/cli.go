package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
)

// ExitError carries a specific exit status, for commands whose status
// means something beyond success or failure (reconcile exits 1 on leaks).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ErrUsage marks a command-line mistake; the exit status is 2.
var ErrUsage = errors.New("usage")

// Env is what a command runs with.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	// Getenv reads the environment; nil means none.
	Lookup func(string) (string, bool)
}

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"migrate": {"apply schema migrations: migrate [up|status]", runMigrate},
	}
}

// Run executes `sluice args...` and returns the process exit status.
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
		fmt.Fprintf(env.Stderr, "sluice: unknown command %q\n\n", args[0])
		usage(env.Stderr)
		return 2
	}
	err := cmd.run(ctx, env, args[1:])
	return exitCode(env.Stderr, err)
}

func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintln(stderr, "sluice:", exit.Err)
		}
		return exit.Code
	}
	fmt.Fprintln(stderr, "sluice:", err)
	if errors.Is(err, ErrUsage) {
		return 2
	}
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sluice COMMAND [flags]\n\nCommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice COMMAND --help' for a command's flags.")
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

func lookupOrNone(env Env) func(string) (string, bool) {
	if env.Lookup != nil {
		return env.Lookup
	}
	return func(string) (string, bool) { return "", false }
}
