package catalog

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/ops/cli"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// CLICommands are the operator commands whose settings the configuration
// page lists: the ones that set up a deployment or run for a long time.
var CLICommands = []string{"migrate", "nats setup", "reconcile", "console", "index create"}

// CLISettings returns the settings of each of CLICommands that have an
// environment variable, keyed by command. The CLI registers them with the
// services' loader as each command runs, so they are read from the usage
// the loader prints for --help, sorted by flag.
func CLISettings() (map[string][]config.Var, error) {
	out := map[string][]config.Var{}
	for _, name := range CLICommands {
		var stdout, stderr bytes.Buffer
		env := cli.Env{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""),
			Lookup: func(string) (string, bool) { return "", false }}
		cli.Run(context.Background(), env, append(strings.Fields(name), "--help"))
		vars, err := parseUsage(stderr.String())
		if err != nil {
			return nil, fmt.Errorf("sluice %s --help: %w", name, err)
		}
		if len(vars) == 0 {
			return nil, fmt.Errorf("sluice %s --help lists no setting:\n%s", name, stderr.String())
		}
		for _, v := range vars {
			if v.Env != "" {
				out[name] = append(out[name], v)
			}
		}
	}
	return out, nil
}

var (
	usageFlag    = regexp.MustCompile(`^  --([a-z0-9-]+)(?: \(\$([A-Z0-9_]+)\))?$`)
	usageDefault = regexp.MustCompile(`^      (.*) \(default ("(?:[^"\\]|\\.)*")\)$`)
)

// parseUsage reads the settings out of config.Loader.PrintUsage's text:
// a line "  --flag ($ENV)", then "      usage (default "value")".
func parseUsage(text string) ([]config.Var, error) {
	lines := strings.Split(text, "\n")
	var vars []config.Var
	for i := 0; i < len(lines); i++ {
		m := usageFlag.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("--%s has no usage line", m[1])
		}
		d := usageDefault.FindStringSubmatch(lines[i+1])
		if d == nil {
			return nil, fmt.Errorf("--%s: usage line %q does not end in (default \"…\")", m[1], lines[i+1])
		}
		def, err := strconv.Unquote(d[2])
		if err != nil {
			return nil, fmt.Errorf("--%s: default %s: %w", m[1], d[2], err)
		}
		vars = append(vars, config.Var{Flag: m[1], Env: m[2], Default: def, Usage: d[1]})
		i++
	}
	return vars, nil
}
