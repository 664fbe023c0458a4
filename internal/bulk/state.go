package bulk

import "github.com/sluicehq/sluice/internal/batchapi"

// State is a batch's state in the ledger (bulk_batches.state).
type State string

// The states of a batch. Open, Sealed and Uploaded are the ledger's own;
// Created to Lost follow the provider; Applied and Requeued are final.
const (
	// Open takes new members.
	Open State = "open"
	// Sealed takes no more members and waits for the builder.
	Sealed State = "sealed"
	// Uploaded has its request file at the provider.
	Uploaded State = "uploaded"
	// Created is a batch the provider has accepted, not yet polled.
	Created    State = "created"
	Validating State = "validating"
	InProgress State = "in_progress"
	Finalizing State = "finalizing"
	Cancelling State = "cancelling"
	// Completed ran every request; its files are being applied.
	Completed State = "completed"
	// Failed failed validation: nothing ran.
	Failed State = "failed"
	// Expired ran out of its window; the requests that ran have results.
	Expired State = "expired"
	// Cancelled was cancelled, at the provider or before it got there.
	Cancelled State = "cancelled"
	// Lost is a batch the provider no longer knows.
	Lost State = "lost"
	// Applied has had every result applied, and every member without one
	// handed back as owed work.
	Applied State = "applied"
	// Requeued ended without completing: its members that have no result
	// were handed back as owed work.
	Requeued State = "requeued"
)

// States lists every state, for the metrics.
var States = []State{Open, Sealed, Uploaded, Created, Validating, InProgress, Finalizing, Cancelling,
	Completed, Failed, Expired, Cancelled, Lost, Applied, Requeued}

// atProvider reports whether the batch is live at the provider: the poller
// asks the provider about it.
func (s State) atProvider() bool {
	switch s {
	case Created, Validating, InProgress, Finalizing, Cancelling:
		return true
	}
	return false
}

// ended reports whether the provider is done with the batch (or never had
// it): what is left is to apply its files and settle its members.
func (s State) ended() bool {
	switch s {
	case Completed, Failed, Expired, Cancelled, Lost:
		return true
	}
	return false
}

// settledAs is the final state of an ended batch once settled.
func (s State) settledAs() State {
	if s == Completed {
		return Applied
	}
	return Requeued
}

// hasFiles reports whether a batch that ended in s has output and error
// files to apply.
func (s State) hasFiles() bool {
	return s == Completed || s == Expired || s == Cancelled
}

// fromProvider is the ledger state of a provider status.
func fromProvider(st batchapi.Status) (State, bool) {
	switch st {
	case batchapi.StatusValidating:
		return Validating, true
	case batchapi.StatusInProgress:
		return InProgress, true
	case batchapi.StatusFinalizing:
		return Finalizing, true
	case batchapi.StatusCancelling:
		return Cancelling, true
	case batchapi.StatusCompleted:
		return Completed, true
	case batchapi.StatusFailed:
		return Failed, true
	case batchapi.StatusExpired:
		return Expired, true
	case batchapi.StatusCancelled:
		return Cancelled, true
	}
	return "", false
}

// MemberState is a member's state (bulk_members.state).
type MemberState string

// The states of a member.
const (
	// Pending waits for its batch's result.
	Pending MemberState = "pending"
	// MemberApplied got its vector, handed to the Applier.
	MemberApplied MemberState = "applied"
	// MemberParked got a permanent error, handed to the Applier.
	MemberParked MemberState = "parked"
	// MemberRequeued got no result it could keep, and was handed to the
	// Requeuer as owed work.
	MemberRequeued MemberState = "requeued"
)
