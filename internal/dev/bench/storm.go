package bench

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
)

// The 429 storm's settings: the share of requests embed-sim answers 429,
// and the Retry-After it sends with them, in seconds.
const (
	stormRate429    = 0.2
	stormRetryAfter = 1
)

// StormIdeal is what the 429 storm run could reach if its waits were its
// only cost beyond the clean run's: every 429 holds one pull loop for
// Retry-After while the others go on, and the work goes no faster than
// the clean pipeline of the same invocation. The run can take no less
// than the clean run's time for as many chunks, nor less than the waits
// shared over the pull loops; the ideal is the longer of the two, for
// while some loops wait the others take up the CPU they leave.
type StormIdeal struct {
	// Requests and Answered429 are the median embedding requests and 429
	// answers embed-sim counted in a storm run.
	Requests    float64 `json:"requests"`
	Answered429 float64 `json:"answered_429"`
	// Observed429Rate is Answered429 / Requests.
	Observed429Rate float64 `json:"observed_429_rate"`
	// RetryAfterSeconds is the Retry-After sent with every 429.
	RetryAfterSeconds float64 `json:"retry_after_seconds"`
	// PullLoops is how many batches wait at once at most: consumer
	// processes × CONSUMER_WORKERS.
	PullLoops int `json:"pull_loops"`
	// CleanChunksPerSec is the clean pipeline's median rate.
	CleanChunksPerSec float64 `json:"clean_chunks_per_sec"`
	// ChunksPerSec is the wait-bound ideal.
	ChunksPerSec float64 `json:"ideal_chunks_per_sec"`
	// Seconds and IdealSeconds are the storm run's median time and its
	// ideal's, for the same chunks.
	Seconds      float64 `json:"seconds,omitempty"`
	IdealSeconds float64 `json:"ideal_seconds,omitempty"`
	// HeldPerWaitMs is how much longer than its Retry-After each 429 kept
	// its pull loop from other work: the storm's time beyond the ideal,
	// over the waits shared by the loops. CleanBatchMs is what a batch
	// takes in its loop in the clean run, to set it against.
	HeldPerWaitMs float64 `json:"held_per_wait_ms,omitempty"`
	CleanBatchMs  float64 `json:"clean_batch_ms,omitempty"`
}

// waitBoundIdeal is the rate of a run of chunks that goes at clean
// chunks/s at most and waits n429 times retryAfter seconds, each wait
// holding one of loops pull loops: its time is the longer of
// chunks/clean and the waits shared over the loops. Adding the two
// instead would assume that no work goes on while a loop waits, when on
// a machine the clean run keeps busy the other loops take up the CPU the
// waiting one leaves: measured so, the storm ran at 1.38 times its
// "ideal" (10,000 chunks, 37 waits of 1 s over 6 loops, clean 2,024
// chunks/s).
func waitBoundIdeal(chunks int, clean, n429, retryAfter float64, loops int) float64 {
	if chunks <= 0 || clean <= 0 || loops <= 0 {
		return 0
	}
	seconds := max(float64(chunks)/clean, n429*retryAfter/float64(loops))
	return float64(chunks) / seconds
}

// stormIdeal is the storm run's wait-bound ideal in r, or nil without a
// storm run and a clean one.
func stormIdeal(r *Report) *StormIdeal {
	storm, clean := r.Run(ScenarioStorm429), r.Run(ScenarioPipeline384)
	if storm == nil || clean == nil || len(storm.Reps) == 0 || clean.Median.ChunksPerSec <= 0 {
		return nil
	}
	s := &StormIdeal{Requests: float64(storm.Median.EmbedRequests), Answered429: float64(storm.Median.Embed429),
		RetryAfterSeconds: stormRetryAfter, PullLoops: consumers * workersPerConsumer, CleanChunksPerSec: clean.Median.ChunksPerSec}
	if s.Requests > 0 {
		s.Observed429Rate = s.Answered429 / s.Requests
	}
	s.ChunksPerSec = waitBoundIdeal(storm.Chunks, s.CleanChunksPerSec, s.Answered429, s.RetryAfterSeconds, s.PullLoops)
	s.CleanBatchMs = 1000 * float64(batchSize*s.PullLoops) / s.CleanChunksPerSec
	if storm.Median.ChunksPerSec > 0 && s.ChunksPerSec > 0 {
		s.Seconds, s.IdealSeconds = float64(storm.Chunks)/storm.Median.ChunksPerSec, float64(storm.Chunks)/s.ChunksPerSec
		if s.Answered429 > 0 {
			s.HeldPerWaitMs = 1000 * (s.Seconds - s.IdealSeconds) * float64(s.PullLoops) / s.Answered429
		}
	}
	return s
}

// simCounts reads embed-sim's count of the requests it received and of
// those it answered 429.
func simCounts(ctx context.Context, simURL string) (requests, answered429 int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := embedsim.FetchCounts(ctx, simURL)
	if err != nil {
		return 0, 0, err
	}
	return c.Requests, c.ByStatus[strconv.Itoa(http.StatusTooManyRequests)], nil
}
