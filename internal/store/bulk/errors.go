package bulk

import (
	"errors"
	"fmt"
	"strings"
)

// Causes of owed work, handed to the Requeuer.
var (
	// ErrBatchFailed: the provider failed the batch at validation, so
	// none of it ran.
	ErrBatchFailed = errors.New("bulk batch failed")
	// ErrBatchExpired: the batch's window closed before the member ran.
	ErrBatchExpired = errors.New("bulk batch expired")
	// ErrBatchCancelled: the batch was cancelled before the member ran.
	ErrBatchCancelled = errors.New("bulk batch cancelled")
	// ErrBatchLost: the provider no longer knows the batch.
	ErrBatchLost = errors.New("bulk batch lost")
	// ErrNotAnswered: the batch ended without a line for the member.
	ErrNotAnswered = errors.New("bulk batch did not answer the request")
)

// ErrTooLarge matches a *RefusedError: a member that fits no batch.
var ErrTooLarge = errors.New("chunk too large for a bulk batch")

// Refusal is one member Admit refused, and the limit it exceeds alone.
type Refusal struct {
	// Member is the chunk job.
	Member Member
	// Err is a *batchapi.LimitError naming the limit.
	Err error
}

// RefusedError lists the members that fit no batch file on their own.
// Admit records nothing when it returns one: park the refused members and
// admit the others. It matches ErrTooLarge.
type RefusedError struct {
	Refused []Refusal
}

// Error implements error.
func (e *RefusedError) Error() string {
	parts := make([]string, 0, len(e.Refused))
	for _, r := range e.Refused {
		parts = append(parts, fmt.Sprintf("%s: %v", r.Member.customID(), r.Err))
	}
	return "bulk: refused " + strings.Join(parts, "; ")
}

// Is matches ErrTooLarge.
func (e *RefusedError) Is(target error) bool { return target == ErrTooLarge }

// causeOf is the cause of owed work for members left pending when a batch
// ended in s.
func causeOf(s State, detail string) error {
	var err error
	switch s {
	case Failed:
		err = ErrBatchFailed
	case Expired:
		err = ErrBatchExpired
	case Cancelled:
		err = ErrBatchCancelled
	case Lost:
		err = ErrBatchLost
	default:
		err = ErrNotAnswered
	}
	if detail != "" {
		return fmt.Errorf("%w: %s", err, detail)
	}
	return err
}
