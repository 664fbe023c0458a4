package catalog

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// PagePath is where the configuration page lives, relative to the
// repository root; go generate in this package writes it.
const PagePath = "docs/configuration.md"

// Services are the binaries of Settings in the order the page lists them.
var Services = []string{"producer", "consumer", "outbox-relay", "dlq-replayer"}

//go:embed configuration.md.tmpl
var pageTemplate string

// Page renders the configuration page: the prose of configuration.md.tmpl
// around one table per group of settings, each group being the settings
// that the same binaries (or CLI commands) register alike. It fails when
// a group is in no table, so a new setting cannot be left off the page.
func Page() ([]byte, error) {
	cliVars, err := CLISettings()
	if err != nil {
		return nil, err
	}
	services := newCatalogue(Services, Settings(), nil)
	services.notes = notes
	commands := newCatalogue(CLICommands, cliVars, services.shared())
	t, err := template.New("configuration.md.tmpl").Funcs(template.FuncMap{
		"services": services.table,
		"cli":      commands.table,
		// pubAckTimeout is the one wait on the hot path that is no setting.
		"pubAckTimeout": func() string { return formatDefault(broker.PubAckTimeout.String()) },
	}).Parse(pageTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		return nil, err
	}
	for _, c := range []*catalogue{services, commands} {
		if err := c.unused(); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// entry is one setting as one or more binaries register it.
type entry struct {
	config.Var
	// defaults maps each binary registering the setting to its default.
	defaults map[string]string
	binaries []string
}

// key identifies a setting across binaries: the same flag, variable and
// meaning, whatever its default.
func (e *entry) key() string { return e.Flag + "\x00" + e.Env + "\x00" + e.Usage }

// catalogue groups the settings of some binaries by the set of binaries
// that register each.
type catalogue struct {
	order  []string
	groups map[string][]*entry // by binaries, joined with ","
	used   map[string]bool
	// notes add to the usage of the settings they name (see notes.go).
	notes map[string]string
}

// newCatalogue groups vars, keyed by binary, leaving out the settings
// whose key is in skip.
func newCatalogue(order []string, vars map[string][]config.Var, skip map[string]bool) *catalogue {
	byKey := map[string]*entry{}
	var entries []*entry
	for _, bin := range order {
		for _, v := range vars[bin] {
			e := &entry{Var: v}
			if skip[e.key()] {
				continue
			}
			if old, ok := byKey[e.key()]; ok {
				e = old
			} else {
				e.defaults = map[string]string{}
				byKey[e.key()] = e
				entries = append(entries, e)
			}
			e.defaults[bin] = v.Default
			e.binaries = append(e.binaries, bin)
		}
	}
	c := &catalogue{order: order, groups: map[string][]*entry{}, used: map[string]bool{}}
	for _, e := range entries {
		k := strings.Join(e.binaries, ",")
		c.groups[k] = append(c.groups[k], e)
	}
	return c
}

// shared returns the keys of the settings every binary registers with
// the same default.
func (c *catalogue) shared() map[string]bool {
	out := map[string]bool{}
	for _, e := range c.groups[strings.Join(c.order, ",")] {
		if len(distinct(e.defaults)) == 1 {
			out[e.key()] = true
		}
	}
	return out
}

// table renders the group registered by exactly the named binaries.
func (c *catalogue) table(binaries ...string) (string, error) {
	k := strings.Join(binaries, ",")
	group := c.groups[k]
	if len(group) == 0 {
		return "", fmt.Errorf("no setting is registered by exactly %s; groups are %s", k, strings.Join(c.keys(), "; "))
	}
	c.used[k] = true
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, e := range group {
		env := ""
		if e.Env != "" {
			env = "`" + e.Env + "`"
		}
		meaning := e.Usage
		if n := c.notes[noteKey(e.Var)]; n != "" {
			meaning += "; " + n
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", e.Flag, env, c.defaultCell(e), cell(meaning))
	}
	return b.String(), nil
}

// defaultCell is one default, or each binary's when they differ.
func (c *catalogue) defaultCell(e *entry) string {
	if d := distinct(e.defaults); len(d) == 1 {
		return formatDefault(d[0])
	}
	var parts []string
	for _, bin := range c.order {
		if d, ok := e.defaults[bin]; ok {
			parts = append(parts, bin+": "+formatDefault(d))
		}
	}
	return strings.Join(parts, "; ")
}

// unused names the groups no table rendered.
func (c *catalogue) unused() error {
	var missing []string
	for _, k := range c.keys() {
		if !c.used[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("configuration.md.tmpl has no table for the settings registered by %s: add one", strings.Join(missing, "; "))
	}
	return nil
}

func (c *catalogue) keys() []string {
	var ks []string
	for k := range c.groups {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func distinct(m map[string]string) []string {
	var out []string
	for _, v := range m {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// formatDefault renders a default: none for empty, durations as written
// by hand (2m, not 2m0s).
func formatDefault(d string) string {
	if d == "" {
		return "none"
	}
	if _, err := time.ParseDuration(d); err == nil && d != "0" {
		if strings.HasSuffix(d, "m0s") {
			d = strings.TrimSuffix(d, "0s")
		}
		if strings.HasSuffix(d, "h0m") {
			d = strings.TrimSuffix(d, "0m")
		}
	}
	return "`" + d + "`"
}

// cell escapes text for a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
