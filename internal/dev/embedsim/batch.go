package embedsim

import (
	"time"
)

// Statuses of a batch, as the provider reports them.
const (
	BatchValidating = "validating"
	BatchFailed     = "failed"
	BatchInProgress = "in_progress"
	BatchFinalizing = "finalizing"
	BatchCompleted  = "completed"
	BatchExpired    = "expired"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
)

// batchStatuses lists every status, for the metrics.
var batchStatuses = []string{
	BatchValidating, BatchFailed, BatchInProgress, BatchFinalizing,
	BatchCompleted, BatchExpired, BatchCancelling, BatchCancelled,
}

// simBatch is one batch and where it is in its life. The store's mutex
// guards it.
type simBatch struct {
	seq         int // creation order
	id          string
	inputFileID string
	endpoint    string
	metadata    map[string]string
	status      string
	errors      []batchError

	createdAt, expiresAt                           time.Time
	inProgressAt, finalizingAt, completedAt        time.Time
	failedAt, expiredAt, cancellingAt, cancelledAt time.Time

	outputFileID, errorFileID string

	// Drawn when the batch is created.
	fail, expire, lose bool
	slowFinalize       time.Duration

	// Known once validated.
	model      string
	lines      []batchLine
	tokens     int
	inProgress time.Duration // time to run every line
	nextAt     time.Time     // the next move, for a live batch
	// finished is how many lines (in input order) ran before the batch
	// ended; set when it ends.
	finished int
}

// batchLine is one request of a batch and, once run, its answer.
type batchLine struct {
	customID string
	body     []byte
	status   int
	response []byte
	tokens   int
}

// batchError is one entry of a batch's errors.data, as the provider
// reports validation failures.
type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

// live reports whether the batch has not ended yet.
func (b *simBatch) live() bool {
	switch b.status {
	case BatchValidating, BatchInProgress, BatchFinalizing, BatchCancelling:
		return true
	}
	return false
}

// enqueued reports whether the batch's tokens count against the
// enqueued-token quota.
func (b *simBatch) enqueued() bool {
	switch b.status {
	case BatchInProgress, BatchFinalizing, BatchCancelling:
		return true
	}
	return false
}

// done is how many lines had run at t: they complete evenly over the
// in-progress phase, in input order.
func (b *simBatch) done(t time.Time) int {
	switch b.status {
	case BatchValidating, BatchFailed:
		return 0
	case BatchFinalizing:
		return len(b.lines)
	case BatchCompleted, BatchExpired, BatchCancelled:
		return b.finished
	}
	if b.status == BatchCancelling {
		t = b.cancellingAt
	}
	elapsed := t.Sub(b.inProgressAt)
	if elapsed >= b.inProgress {
		return len(b.lines)
	}
	if elapsed <= 0 {
		return 0
	}
	return int(int64(len(b.lines)) * int64(elapsed) / int64(b.inProgress))
}

// requestCounts are the batch's request_counts at t.
func (b *simBatch) requestCounts(t time.Time) requestCounts {
	rc := requestCounts{Total: len(b.lines)}
	n := b.done(t)
	for _, l := range b.lines[:n] {
		if l.status == 200 {
			rc.Completed++
		} else {
			rc.Failed++
		}
	}
	if !b.live() {
		// Lines that never ran end in the error file too.
		rc.Failed += len(b.lines) - n
	}
	return rc
}

type requestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// batchObject is the provider's batch object. Every field is present;
// those that do not apply are null, as the provider sends them.
type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Model            *string           `json:"model"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    requestCounts     `json:"request_counts"`
	Usage            *batchUsage       `json:"usage"`
	Metadata         map[string]string `json:"metadata"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

// batchUsage is the usage of an ended batch; embeddings have no output
// tokens.
type batchUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// object renders the batch as the API shows it at t.
func (b *simBatch) object(t time.Time) batchObject {
	o := batchObject{
		ID: b.id, Object: "batch", Endpoint: b.endpoint, Model: stringOrNil(b.model),
		InputFileID: b.inputFileID, CompletionWindow: CompletionWindow, Status: b.status,
		OutputFileID: stringOrNil(b.outputFileID), ErrorFileID: stringOrNil(b.errorFileID),
		CreatedAt: b.createdAt.Unix(), InProgressAt: unixOrNil(b.inProgressAt),
		ExpiresAt: unixOrNil(b.expiresAt), FinalizingAt: unixOrNil(b.finalizingAt),
		CompletedAt: unixOrNil(b.completedAt), FailedAt: unixOrNil(b.failedAt),
		ExpiredAt: unixOrNil(b.expiredAt), CancellingAt: unixOrNil(b.cancellingAt),
		CancelledAt:   unixOrNil(b.cancelledAt),
		RequestCounts: b.requestCounts(t),
		Metadata:      b.metadata,
	}
	if len(b.errors) > 0 {
		o.Errors = &batchErrors{Object: "list", Data: b.errors}
	}
	if !b.live() && b.status != BatchFailed {
		u := &batchUsage{}
		for _, l := range b.lines[:b.finished] {
			u.InputTokens += l.tokens
		}
		u.TotalTokens = u.InputTokens
		o.Usage = u
	}
	return o
}
