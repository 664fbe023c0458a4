package view

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

// States lists every state.
var States = []State{Open, Sealed, Uploaded, Created, Validating, InProgress, Finalizing, Cancelling,
	Completed, Failed, Expired, Cancelled, Lost, Applied, Requeued}

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

// Outcome is how a settled batch ended (bulk_batches.outcome): its final
// state says only whether its results were applied (Applied) or its
// members handed back (Requeued).
type Outcome string

// The outcomes of a batch.
const (
	// OutcomeCompleted ran every request.
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed failed at the provider, nothing ran: ErrorCode and
	// ErrorMessage say why.
	OutcomeFailed Outcome = "failed"
	// OutcomeExpired ran out of its window: Answered members took a
	// result, Unanswered were handed back.
	OutcomeExpired Outcome = "expired"
	// OutcomeCancelled was cancelled, at the provider or before it got
	// there.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeLost is a batch the provider no longer knew.
	OutcomeLost Outcome = "lost"
	// OutcomeOutputLost ended, but its result files were gone at the
	// provider before they were read.
	OutcomeOutputLost Outcome = "output_lost"
)

// Outcomes lists every outcome.
var Outcomes = []Outcome{OutcomeCompleted, OutcomeFailed, OutcomeExpired, OutcomeCancelled, OutcomeLost, OutcomeOutputLost}
