package deadletter

import "strings"

// State is where a dead letter stands on its way out of the DLQ, derived
// from its resolved_at, replayed_at, last_failed_at and next_retry_at.
// Every dead letter is in exactly one State; StateSQL computes it and
// State.Where selects it, from the same conditions.
type State string

// The states of a dead letter, in the order they are decided: the first
// whose condition holds is the dead letter's state.
const (
	// StateResolved: its chunk was stored (or its document superseded or
	// deleted) since it failed; resolved_at says when.
	StateResolved State = "resolved"
	// StateDispatched: unresolved, and an operator replay marked it
	// after its last failure (replayed_at >= last_failed_at): the replay
	// job is on its way and its outcome pending, so nothing else replays
	// it meanwhile.
	StateDispatched State = "dispatched"
	// StateManual: unresolved, not dispatched, and without a retry time:
	// only an operator replays it.
	StateManual State = "manual"
	// StateReady: unresolved, not dispatched, and due (next_retry_at has
	// passed).
	StateReady State = "ready"
	// StateBackingOff: unresolved, not dispatched, and not due yet
	// (next_retry_at is ahead).
	StateBackingOff State = "backing_off"
)

// StateOpen is not a state of its own: as a Filter's State it selects
// every unresolved dead letter, whatever its state.
const StateOpen State = "open"

// dispatchedSQL holds for a dead letter an operator replay marked since
// its last failure (replayed_at is NULL until one does), and
// notDispatched for any other; neither is ever NULL, as last_failed_at
// never is.
const (
	dispatchedSQL = "(d.replayed_at IS NOT NULL AND d.replayed_at >= d.last_failed_at)"
	notDispatched = "NOT " + dispatchedSQL
)

// stateConditions are the conditions, on dead_letters aliased d, that
// define each state, in the order StateSQL decides them. They exclude
// each other and cover every row (a NULL counts as false, as it does in
// WHERE and in CASE), and Where and StateSQL both read them, so a listed
// state and a filtered one never disagree.
var stateConditions = []struct {
	state State
	cond  string
}{
	{StateResolved, "d.resolved_at IS NOT NULL"},
	{StateDispatched, "d.resolved_at IS NULL AND " + dispatchedSQL},
	{StateManual, "d.resolved_at IS NULL AND " + notDispatched + " AND d.next_retry_at IS NULL"},
	{StateReady, "d.resolved_at IS NULL AND " + notDispatched + " AND d.next_retry_at <= now()"},
	{StateBackingOff, "d.resolved_at IS NULL AND " + notDispatched + " AND d.next_retry_at > now()"},
}

// States lists every state, in the order a form offers them.
var States = []State{StateReady, StateBackingOff, StateManual, StateDispatched, StateResolved}

// StateSQL is the expression, on dead_letters aliased d, that computes a
// dead letter's State. It is built from constants only, never from input.
func StateSQL() string {
	var b strings.Builder
	b.WriteString("(CASE")
	for _, c := range stateConditions {
		b.WriteString(" WHEN " + c.cond + " THEN '" + string(c.state) + "'")
	}
	b.WriteString(" END)")
	return b.String()
}

// Where returns the condition, on dead_letters aliased d, that selects
// the dead letters in state s (every unresolved one for StateOpen), and
// false for a value that is no state. It is built from constants only.
func (s State) Where() (string, bool) {
	if s == StateOpen {
		return "d.resolved_at IS NULL", true
	}
	for _, c := range stateConditions {
		if c.state == s {
			return "(" + c.cond + ")", true
		}
	}
	return "", false
}

// Valid reports whether s is a state, or StateOpen.
func (s State) Valid() bool {
	_, ok := s.Where()
	return ok
}
