package pipeline

import (
	"math"
	"sync"
)

// rejectionRate estimates the share of inputs the embedder rejects, from
// its recent answers, so that embed can size requests to it. The embedder
// names one rejected input per answer, and every input after it goes out
// again: while rejections are rare a whole batch in one request is
// cheapest, but at 5% a batch of 64 holds about three, and sending each
// survivor again after every rejection costs three inputs sent per chunk.
// Requests sized to hold about half a rejected input cost under two. Safe
// for concurrent use.
type rejectionRate struct {
	mu sync.Mutex
	// examined and rejected count inputs the embedder answered for, each
	// input's weight halving every rejectionHalfLife inputs examined
	// after it.
	examined, rejected float64
}

const (
	// rejectionHalfLife is how many inputs examined after an answer halve
	// its weight in the estimate: long enough to smooth a few unlucky
	// batches, short enough to follow a corpus whose quality changes.
	rejectionHalfLife = 1024
	// rejectionsPerRequest is how many rejected inputs requestSize lets a
	// request expect: about half of one.
	rejectionsPerRequest = 0.5
	// minRequestInputs bounds how far requestSize splits: below it the
	// cost of the extra requests outweighs the resends they save.
	minRequestInputs = 4
)

// observe records an answer that examined inputs and rejected some of
// them. A rejection naming input i examined the i inputs before it too;
// the inputs after it are unexamined.
func (r *rejectionRate) observe(examined, rejected int) {
	if examined <= 0 {
		return
	}
	keep := math.Exp2(-float64(examined) / rejectionHalfLife)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.examined = r.examined*keep + float64(examined)
	r.rejected = r.rejected*keep + float64(rejected)
}

// rate returns the estimated share of inputs rejected, 0 before any
// answer.
func (r *rejectionRate) rate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.examined == 0 {
		return 0
	}
	return r.rejected / r.examined
}

// requestSize returns how many of n inputs no answer has vouched for yet
// one request should carry: all n while a request of n would hold under
// half a rejected input, fewer as rejections grow common, never under
// minRequestInputs.
func (r *rejectionRate) requestSize(n int) int {
	rate := r.rate()
	if rate*float64(n) <= rejectionsPerRequest {
		return n
	}
	return max(min(n, minRequestInputs), int(math.Round(rejectionsPerRequest/rate)))
}

// pieces splits jobs into about equal parts of at most size each.
func pieces(jobs []*Job, size int) [][]*Job {
	k := (len(jobs) + size - 1) / size
	out := make([][]*Job, 0, k)
	for i := range k {
		out = append(out, jobs[i*len(jobs)/k:(i+1)*len(jobs)/k])
	}
	return out
}
