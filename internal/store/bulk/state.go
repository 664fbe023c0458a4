package bulk

import (
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk/view"
)

// State is a batch's state in the ledger (bulk_batches.state), and
// MemberState a member's (bulk_members.state): package view declares
// them, so that the console reads the ledger without linking the Batch
// API client.
type (
	State       = view.State
	MemberState = view.MemberState
)

// The states, as package view names them.
const (
	Open           = view.Open
	Sealed         = view.Sealed
	Uploaded       = view.Uploaded
	Created        = view.Created
	Validating     = view.Validating
	InProgress     = view.InProgress
	Finalizing     = view.Finalizing
	Cancelling     = view.Cancelling
	Completed      = view.Completed
	Failed         = view.Failed
	Expired        = view.Expired
	Cancelled      = view.Cancelled
	Lost           = view.Lost
	Applied        = view.Applied
	Requeued       = view.Requeued
	Pending        = view.Pending
	MemberApplied  = view.MemberApplied
	MemberParked   = view.MemberParked
	MemberRequeued = view.MemberRequeued
)

// States lists every state, for the metrics.
var States = view.States

// atProvider reports whether the batch is live at the provider: the poller
// asks the provider about it.
func atProvider(s State) bool {
	switch s {
	case Created, Validating, InProgress, Finalizing, Cancelling:
		return true
	}
	return false
}

// ended reports whether the provider is done with the batch (or never had
// it): what is left is to apply its files and settle its members.
func ended(s State) bool {
	switch s {
	case Completed, Failed, Expired, Cancelled, Lost:
		return true
	}
	return false
}

// settledAs is the final state of an ended batch once settled.
func settledAs(s State) State {
	if s == Completed {
		return Applied
	}
	return Requeued
}

// hasFiles reports whether a batch that ended in s has output and error
// files to apply.
func hasFiles(s State) bool {
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
