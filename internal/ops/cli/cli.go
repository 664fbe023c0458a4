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
		"migrate":   {"apply schema migrations: migrate [up|status]", runMigrate},
		"batches":   {"bulk mode's provider batches: batches ls|show", runBatches},
		"console":   {"serve the triage web console for the dead-letter queue", runConsole},
		"doctor":    {"check a configuration end to end: PostgreSQL, roles, NATS, the embedder; exit 1 if anything is wrong", runDoctor},
		"docs":      {"documents: docs ls|show|delete (dry run unless --execute)", runDocs},
		"index":     {"index generations: index ls|create|status|compare|build|activate|drop (changes are dry runs unless --execute)", runIndex},
		"dlq":       {"dead letters: dlq stats|ls|show|report|replay|correct|audit|pause|resume", runDLQ},
		"nats":      {"declare the JetStream topology as its owner: nats setup", runNATS},
		"reconcile": {"check that every chunk is stored or parked; --redrive re-publishes owed work", runReconcile},
		"runs":      {"ingest runs: runs [--source S] [--wait D] | runs resume RUN | runs cancel RUN --reason R", runRuns},
		"search":    {"semantic search over ready documents: search TEXT", runSearch},
		"sources":   {"sources: sources ls|add|rm (add table NAME ... keeps a PostgreSQL table in step)", runSources},
	}
}

func dlqCommands() map[string]command {
	return map[string]command{
		"stats":   {"dead letters by error class, replay readiness", runDLQStats},
		"ls":      {"list dead letters (filters: --source --error-class --since --until --run --unresolved)", runDLQList},
		"show":    {"show one dead letter: show DEAD_LETTER_ID", runDLQShow},
		"report":  {"source × error class with examples and the shape of the DLQ", runDLQReport},
		"replay":  {"replay dead letters in an explicit scope (dry run unless --execute)", runDLQReplay},
		"correct": {correctUsage, runDLQCorrect},
		"audit":   {"list replays, corrections, dry runs, pauses and resumes with who asked and each replay's outcome", runDLQAudit},
		"pause":   {"pause operator and automatic replays", runDLQPause},
		"resume":  {"resume operator and automatic replays", runDLQResume},
	}
}

func runDLQ(ctx context.Context, env Env, args []string) error {
	return subcommand(ctx, env, "dlq", dlqCommands(), args)
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
	for _, n := range sortedKeys(cmds) {
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

func sortedKeys(m map[string]command) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
