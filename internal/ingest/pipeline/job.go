package pipeline

import (
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Outcome is what the caller must do with a job's message.
type Outcome int

// Outcomes. Stored, Duplicate, Superseded and Batched are acknowledged;
// Retry is negatively acknowledged with Job.Delay; Parked is terminated,
// its dead letter already committed to the outbox.
const (
	Undecided Outcome = iota
	Stored
	Duplicate
	Superseded
	Retry
	Parked
	// Batched: the bulk ledger holds the job, committed, until a provider
	// batch answers it (package bulk).
	Batched
)

var outcomeNames = [...]string{"undecided", "stored", "duplicate", "superseded", "retry", "parked", "batched"}

func (o Outcome) String() string { return outcomeNames[o] }

// Job is one message to process.
type Job struct {
	// Raw is the message body exactly as received; a dead letter carries it.
	Raw []byte
	// MsgID is the Nats-Msg-Id, used to name a job that cannot be decoded.
	MsgID string
	// Seq is the stream sequence, a last resort to name an undecodable job.
	Seq uint64
	// Published is when JetStream took the message (its metadata's
	// timestamp); zero when unknown. The manifest records it for a chunk
	// settled before its producer confirmed the publish.
	Published time.Time
	// Delivered counts deliveries of this message, from 1.
	Delivered int
	// Replay is set for jobs from ingest.replay.* and the replayer.
	Replay bool
	// HoldOnThrottle sends a job that was rate-limited, or refused by an
	// open breaker, back to wait even past the delivery cap. The replayer
	// sets it: throttling is not the chunk's fault and must not cost it a
	// replay generation. Only a caller whose redeliveries are unbounded
	// may set it.
	HoldOnThrottle bool
	// FinalAttempt makes this delivery the job's last, whatever its
	// source's delivery cap: a transient or ambiguous failure parks it.
	// The replayer sets it, since a replay gets one attempt per
	// generation.
	FinalAttempt bool

	// Outcome, Delay and Failure are set by Process.
	Outcome Outcome
	Delay   time.Duration
	Failure *Failure

	chunk  messages.ChunkJob
	vector []float32
	// textHash is vectorstore.HashText of the chunk's text, set by reuse.
	textHash vectorstore.TextHash
	// prevClass is the error class recorded by an earlier delivery.
	prevClass string
	// held says this delivery goes back without spending the job's
	// budget (see routeFailure).
	held bool
}

// Reset clears what Process decided, so that a batch whose commit failed
// can be processed again as if new.
func (j *Job) Reset() {
	j.Outcome, j.Delay, j.Failure = Undecided, 0, nil
	j.chunk, j.vector, j.prevClass, j.held, j.textHash = messages.ChunkJob{}, nil, "", false, vectorstore.TextHash{}
}

// Chunk returns the decoded job; valid once Process has run and the job
// was decodable.
func (j *Job) Chunk() messages.ChunkJob { return j.chunk }

// Failure is why a job was parked or will be retried.
type Failure struct {
	Decision classify.Decision
	Stage    string
	Err      error
	// ParkedClass is the error_class of the dead letter: the decision's
	// class, or transient_exhausted / ambiguous_exhausted / replay_exhausted
	// when a budget ran out.
	ParkedClass string
	NextRetryAt *time.Time
}

// Stages, as recorded in dead letters.
const (
	StageDecode = "decode"
	StagePolicy = "policy"
	StageEmbed  = "embed"
	StageStore  = "store"
	StageCap    = "delivery_cap"
	// StageRun: the chunk's run was cancelled.
	StageRun = "run"
)
