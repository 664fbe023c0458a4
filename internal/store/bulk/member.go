package bulk

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Member is one chunk job held by the ledger until its batch answers.
type Member struct {
	// Generation is the index generation the vector is for. Defaults to
	// 1.
	Generation int
	// SourceID is the chunk's source: a source's members share batches.
	// Required.
	SourceID string
	// DocID, ChunkIndex and Version name the chunk version. Required.
	DocID      string
	ChunkIndex int
	Version    int64
	// ContentHash is the chunk's content hash, for the store's guard.
	ContentHash string
	// Text is what is embedded. Required.
	Text string

	// BatchID is the ledger's batch, set by the ledger.
	BatchID int64
	// CustomID names the member in its batch, set by the ledger: the
	// chunk job's message id (messages.ChunkMsgID).
	CustomID string
	// LineID is the custom_id of the request line the member waits on,
	// set by the ledger (LineID of its text): members of a batch with the
	// same text share one line and take its one answer.
	LineID string
}

func (m Member) customID() string { return messages.ChunkMsgID(m.DocID, m.ChunkIndex, m.Version) }

// Result is what a batch answered for one member: a vector, or an error
// the classifier says is the input's fault (Decision.Disposition
// Quarantine or Escalate).
type Result struct {
	// Member is the chunk job.
	Member Member
	// Vector is its embedding, nil when Err is set.
	Vector []float32
	// Err is why it failed, as the live endpoint would have failed it.
	Err error
	// Decision is Err's classification, zero for a vector.
	Decision classify.Decision
	// PromptTokens is the input tokens the provider counted.
	PromptTokens int
}

// Owed is a member handed back as owed work, with why it has no result:
// a retryable line error, or its batch failed, expired, was cancelled or
// lost (ErrBatchFailed, ErrBatchExpired, ErrBatchCancelled, ErrBatchLost),
// or the files did not answer it (ErrNotAnswered).
type Owed struct {
	// Member is the chunk job.
	Member Member
	// Cause is why it is owed.
	Cause error
}

// Applier applies results in the caller's transaction, as the store and
// park path of live ingestion: a vector is stored behind the version
// guard, a permanent error parks the chunk. The ledger records the
// members applied in the same transaction, so a result is applied once
// however often its file is read; a vector older than what is stored
// must change nothing.
type Applier interface {
	Apply(ctx context.Context, tx pgx.Tx, results []Result) error
}

// Requeuer makes members owed work again in the caller's transaction:
// another bulk batch (Ledger.Admit), or a job for the live path. The
// ledger marks them requeued in the same transaction.
type Requeuer interface {
	Requeue(ctx context.Context, tx pgx.Tx, owed []Owed) error
}
