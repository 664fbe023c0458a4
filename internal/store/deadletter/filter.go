package deadletter

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
)

// FilterStates lists what a Filter's State can select, in the order a
// form offers them: StateOpen, then every state.
var FilterStates = append([]State{StateOpen}, States...)

// Filter selects dead letters. Empty strings and zero times do not filter;
// Since and Until bound last_failed_at.
type Filter struct {
	// Source selects one source_id.
	Source string `json:"source,omitempty"`
	// ErrorClass selects one error class.
	ErrorClass string `json:"error_class,omitempty"`
	// Disposition selects retry, quarantine, ambiguous or escalate.
	Disposition string `json:"disposition,omitempty"`
	// Stage selects the pipeline stage that failed.
	Stage string `json:"stage,omitempty"`
	// Run selects one ingest run.
	Run string `json:"run,omitempty"`
	// Since selects failures at or after it (last_failed_at).
	Since time.Time `json:"since,omitzero"`
	// Until selects failures before it (last_failed_at).
	Until time.Time `json:"until,omitzero"`
	// State is one of FilterStates, or empty for any.
	State State `json:"state,omitempty"`
	// Detail is a full-text query (web search syntax) over error_detail.
	Detail string `json:"detail,omitempty"`
	// PayloadText matches dead letters whose payload bytes contain it. It
	// never matches an escalation, so a search cannot probe a secret.
	PayloadText string `json:"payload_text,omitempty"`
}

// Validate says how to fix a filter that cannot select anything sensible.
func (f Filter) Validate() error {
	switch f.Disposition {
	case "", messages.DispositionRetry, messages.DispositionQuarantine, messages.DispositionAmbiguous, messages.DispositionEscalate:
	default:
		return fmt.Errorf("disposition %q: use retry, quarantine, ambiguous or escalate", f.Disposition)
	}
	if f.State != "" && !f.State.Valid() {
		names := make([]string, len(FilterStates))
		for i, s := range FilterStates {
			names[i] = string(s)
		}
		return fmt.Errorf("state %q: use one of %s", f.State, strings.Join(names, ", "))
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return nil
}

// Narrow reports whether the filter names a scope a replay may take:
// at least a source, an error class, a run or a start time. Replays are
// never "everything".
func (f Filter) Narrow() bool {
	return f.Source != "" || f.ErrorClass != "" || f.Run != "" || !f.Since.IsZero()
}

// Args collects the positional parameters of a statement.
type Args []any

// Add appends v and returns its placeholder.
func (a *Args) Add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// Where returns the filter as a SQL condition on dead_letters aliased d,
// its values appended to args. It is "TRUE" for the empty filter.
func (f Filter) Where(args *Args) string {
	conds := []string{"TRUE"}
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, col+" = "+args.Add(v))
		}
	}
	eq("d.source_id", f.Source)
	eq("d.error_class", f.ErrorClass)
	eq("d.disposition", f.Disposition)
	eq("d.stage", f.Stage)
	eq("d.run_id", f.Run)
	if !f.Since.IsZero() {
		conds = append(conds, "d.last_failed_at >= "+args.Add(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, "d.last_failed_at < "+args.Add(f.Until))
	}
	if cond, ok := f.State.Where(); ok {
		conds = append(conds, cond)
	}
	if f.Detail != "" {
		conds = append(conds, "to_tsvector('simple', coalesce(d.error_detail, '')) @@ websearch_to_tsquery('simple', "+args.Add(f.Detail)+")")
	}
	if f.PayloadText != "" {
		conds = append(conds, "d.disposition <> 'escalate'", "position("+args.Add([]byte(f.PayloadText))+"::bytea in d.payload) > 0")
	}
	return strings.Join(conds, " AND ")
}
