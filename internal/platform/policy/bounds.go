package policy

import "time"

// Bounds is one retention setting of every source, laid out as a purge
// statement takes it: rows of Sources[i] are kept Seconds[i] seconds,
// rows of any other source (or of none) Default seconds.
type Bounds struct {
	Sources []string
	Seconds []float64
	Default float64
}

// Bounds returns field's value for each source with a section of its own,
// and the default section's for the rest.
func (t *Table) Bounds(field func(Settings) time.Duration) Bounds {
	b := Bounds{Default: field(t.defaults).Seconds()}
	for _, source := range t.Sources() {
		b.Sources = append(b.Sources, source)
		b.Seconds = append(b.Seconds, field(t.sources[source]).Seconds())
	}
	return b
}

// Shortest is the shortest bound of any source: no row younger than it
// is due, which lets a statement reach the due rows through an index on
// their age.
func (b Bounds) Shortest() float64 {
	shortest := b.Default
	for _, s := range b.Seconds {
		shortest = min(shortest, s)
	}
	return shortest
}

// PayloadRetention selects Settings.PayloadRetention, for Table.Bounds.
func PayloadRetention(s Settings) time.Duration { return s.PayloadRetention }

// EscalationRetention selects Settings.EscalationRetention, for
// Table.Bounds.
func EscalationRetention(s Settings) time.Duration { return s.EscalationRetention }

// HistoryRetention selects Settings.HistoryRetention, for Table.Bounds.
func HistoryRetention(s Settings) time.Duration { return s.HistoryRetention }
