package vectorstore

import (
	"errors"
	"fmt"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrDimsMismatch means the configured dimension is not the one the
	// database was migrated for. Open returns it; nothing can be stored
	// until the configuration or the database changes.
	ErrDimsMismatch = errors.New("vectorstore: embedding dimension mismatch")
	// ErrNotMigrated means the database lacks the settings migration 2
	// records; run `sluice migrate` first.
	ErrNotMigrated = errors.New("vectorstore: database not migrated")
	// ErrDuplicateRecord matches a *DuplicateError.
	ErrDuplicateRecord = errors.New("vectorstore: duplicate record in batch")
	// ErrConcurrentWrite means another transaction rewrote or removed a
	// chunk while Upsert was writing it, so its outcome is unknown. Upsert
	// returns it wrapped as a retryable classify error: trying again
	// settles it.
	ErrConcurrentWrite = errors.New("vectorstore: concurrent write to the same chunk")
)

// RecordError is an invalid record in an Upsert batch. Err is a permanent
// classify error (errors.Is(err, classify.ErrPermanent) holds) whose class
// says what is wrong, so the caller can park exactly the record at Index and
// upsert the rest. Upsert reports the first invalid record only; Validate
// checks records one at a time when a caller wants them all.
type RecordError struct {
	// Index is the record's position in the batch.
	Index int
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *RecordError) Error() string {
	return fmt.Sprintf("vectorstore: record %d: %v", e.Index, e.Err)
}

// Unwrap returns the cause.
func (e *RecordError) Unwrap() error { return e.Err }

// DuplicateError is a batch holding the same (doc_id, chunk_index) twice,
// which one INSERT ... ON CONFLICT statement cannot apply. It is not a
// RecordError: neither record is bad, the batch is; drop one of them (for
// instance the redelivered copy of a job) and upsert again.
type DuplicateError struct {
	// DocID and ChunkIndex are the repeated key.
	DocID      string
	ChunkIndex int
	// First and Second are the positions of the two records in the batch.
	First, Second int
}

// Error implements error.
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("vectorstore: records %d and %d are both chunk %s/%d: an upsert batch must hold each chunk once",
		e.First, e.Second, e.DocID, e.ChunkIndex)
}

// Is matches ErrDuplicateRecord.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicateRecord }
