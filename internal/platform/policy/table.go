package policy

import (
	"sort"
	"time"
)

// Table is a resolved policy: the default settings and each named
// source's. It is immutable and safe for concurrent use.
type Table struct {
	defaults Settings
	sources  map[string]Settings
	mandate  time.Duration
}

// New returns a table holding defaults alone, validated against mandate.
func New(defaults Settings, mandate time.Duration) (*Table, error) {
	defaults = defaults.withUnflagged()
	if err := defaults.Validate(mandate); err != nil {
		return nil, err
	}
	return &Table{defaults: defaults, sources: map[string]Settings{}, mandate: mandate}, nil
}

// For returns the settings of source: its own section over the default
// section, or the default section for a source the file does not name.
func (t *Table) For(source string) Settings {
	if s, ok := t.sources[source]; ok {
		return s
	}
	return t.defaults
}

// Default returns the default section's settings, which also hold the
// embedder-wide breaker and rate budget.
func (t *Table) Default() Settings { return t.defaults }

// Mandate is the retention floor that escalations are never purged below.
func (t *Table) Mandate() time.Duration { return t.mandate }

// Sources lists the sources with their own section, sorted.
func (t *Table) Sources() []string {
	names := make([]string, 0, len(t.sources))
	for s := range t.sources {
		names = append(names, s)
	}
	sort.Strings(names)
	return names
}

// Longest returns the largest value of field over the default and every
// source, e.g. the soft time limit a batch deadline must cover.
func (t *Table) Longest(field func(Settings) time.Duration) time.Duration {
	longest := field(t.defaults)
	for _, s := range t.sources {
		longest = max(longest, field(s))
	}
	return longest
}
