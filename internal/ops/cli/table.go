package cli

import (
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/platform/config"
)

// newTable returns a writer that aligns tab-separated columns; call Flush
// when the table is complete.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// tableTime formats a timestamp for a table: UTC to the second, so that
// columns line up and operators in different zones read the same value.
func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// tableTimePtr is tableTime for a nullable column.
func tableTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return tableTime(*t)
}

// utcPtr normalises a nullable timestamp for JSON output.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// printable replaces control characters other than newline and tab. Source
// ids, error details and chunk text come from outside; written raw, an
// escape sequence in them could rewrite the operator's terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

// cell makes s safe for one table cell: printable, on one line, with "-"
// for empty.
func cell(s string) string {
	s = strings.Join(strings.Fields(printable(s)), " ")
	if s == "" {
		return "-"
	}
	return s
}

// elide shortens s to at most n runes by cutting out its middle: paths and
// URLs differ at both ends (host or directory, file name).
func elide(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 3 {
		return s
	}
	head := (n - 1) / 3
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// snippet is text on one line, cut to about n runes.
func snippet(text string, n int) string {
	s := cell(text)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// parseTimeFlag reads a --since/--until value: an RFC 3339 time, or a
// duration meaning "that long before now". It accepts the same forms as
// dlq replay, so that a scope listed with ls can be replayed as written.
func parseTimeFlag(name, value string, now time.Time) (*time.Time, error) {
	if value == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return &t, nil
	}
	if d, err := time.ParseDuration(value); err == nil && d >= 0 {
		t := now.Add(-d)
		return &t, nil
	}
	return nil, usageErr("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration meaning that long ago (90m, 24h, 168h)", name, value)
}

// parseInterspersed parses args allowing flags after positional
// arguments ("show ID --text"), which the flag package alone stops at.
// Everything after "--" is positional.
func parseInterspersed(l *config.Loader, args []string) ([]string, error) {
	var pos []string
	for {
		rest, err := parse(l, args)
		if err != nil {
			return nil, err
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// noArgs rejects positional arguments a command does not take.
func noArgs(cmd string, rest []string) error {
	if len(rest) > 0 {
		return usageErr("%s takes no arguments, got %q (flags start with --)", cmd, rest)
	}
	return nil
}

// checkLimit validates a --limit value.
func checkLimit(limit, max int) error {
	if limit < 1 || limit > max {
		return usageErr("--limit %d: want 1..%d", limit, max)
	}
	return nil
}
