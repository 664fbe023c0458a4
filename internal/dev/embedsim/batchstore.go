package embedsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// batchStore holds the files and batches, and moves batches along their
// phases as the clock passes. Batches move only when a request looks at
// the store: every move happens at the time it was due, in time order,
// so that what a request sees depends on the clock alone.
type batchStore struct {
	s *Server

	mu  sync.Mutex
	rng *rand.Rand
	// ids draws file, batch and line ids apart from rng: a provider's
	// ids are never reused, so a server started again with the same seed
	// must not give out its earlier ids, while its faults stay the seed's.
	ids      *rand.Rand
	faults   BatchFaults
	files    map[string]*storedFile
	batches  map[string]*simBatch
	seq      int
	enqueued int // tokens of batches that count against the quota
}

func newBatchStore(s *Server) *batchStore {
	seed := s.cfg.Seed
	return &batchStore{
		s:       s,
		rng:     rand.New(rand.NewPCG(seed^0xba7c4, seed)),
		ids:     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), seed)),
		faults:  s.cfg.Batch.Faults,
		files:   make(map[string]*storedFile),
		batches: make(map[string]*simBatch),
	}
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newID returns prefix followed by n random characters, unique across
// the server's restarts. Requires st.mu.
func (st *batchStore) newID(prefix string, n int) string {
	b := make([]byte, 0, len(prefix)+n)
	b = append(b, prefix...)
	for range n {
		b = append(b, idAlphabet[st.ids.IntN(len(idAlphabet))])
	}
	return string(b)
}

func (st *batchStore) addFile(name, purpose string, data []byte, now time.Time) *storedFile {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.addFileLocked(name, purpose, data, now)
}

func (st *batchStore) addFileLocked(name, purpose string, data []byte, now time.Time) *storedFile {
	st.seq++
	f := &storedFile{id: st.newID("file-", 22), seq: st.seq, filename: name, purpose: purpose, createdAt: now, data: data}
	st.files[f.id] = f
	return f
}

func (st *batchStore) file(id string, now time.Time) (*storedFile, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.advance(now)
	f, ok := st.files[id]
	return f, ok
}

func (st *batchStore) deleteFile(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.files[id]
	delete(st.files, id)
	return ok
}

// listFiles returns up to limit files of purpose (any when empty), newest
// first, starting after the file named by after (if any), and whether
// more follow.
func (st *batchStore) listFiles(purpose, after string, limit int) ([]fileObject, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	all := make([]*storedFile, 0, len(st.files))
	for _, f := range st.files {
		if purpose == "" || f.purpose == purpose {
			all = append(all, f)
		}
	}
	slices.SortFunc(all, func(a, b *storedFile) int { return b.seq - a.seq })
	if after != "" {
		i := slices.IndexFunc(all, func(f *storedFile) bool { return f.id == after })
		all = all[i+1:] // an unknown cursor (i = -1) lists from the start
	}
	more := len(all) > limit
	all = all[:min(limit, len(all))]
	out := make([]fileObject, len(all))
	for i, f := range all {
		out[i] = f.object()
	}
	return out, more
}

// create registers a batch over the input file, drawing its faults.
func (st *batchStore) create(fileID, endpoint string, metadata map[string]string, now time.Time) (batchObject, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.advance(now)
	if _, ok := st.files[fileID]; !ok {
		return batchObject{}, false
	}
	st.seq++
	b := &simBatch{
		seq: st.seq, id: st.newID("batch_", 24), inputFileID: fileID, endpoint: endpoint,
		metadata: metadata, status: BatchValidating, createdAt: now,
		expiresAt: now.Add(st.s.cfg.Batch.Window),
		nextAt:    now.Add(st.s.cfg.Batch.Validating),
		fail:      st.draw(st.faults.FailRate), expire: st.draw(st.faults.ExpireRate),
		lose: st.draw(st.faults.LoseRate), slowFinalize: st.faults.SlowFinalize,
	}
	st.batches[b.id] = b
	st.s.metrics.batchMoved("", BatchValidating)
	return b.object(now), true
}

// refuseCreate draws whether a create is refused.
func (st *batchStore) refuseCreate() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.draw(st.faults.RefuseCreateRate)
}

// draw reports a hit with probability p. Requires st.mu.
func (st *batchStore) draw(p float64) bool {
	return p > 0 && st.rng.Float64() < p
}

func (st *batchStore) get(id string, now time.Time) (batchObject, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.advance(now)
	b, ok := st.batches[id]
	if !ok {
		return batchObject{}, false
	}
	return b.object(now), true
}

// list returns up to limit batches, newest first, starting after the
// batch named by after (if any), and whether more follow.
func (st *batchStore) list(after string, limit int, now time.Time) ([]batchObject, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.advance(now)
	all := make([]*simBatch, 0, len(st.batches))
	for _, b := range st.batches {
		all = append(all, b)
	}
	slices.SortFunc(all, func(a, b *simBatch) int { return b.seq - a.seq })
	if after != "" {
		i := slices.IndexFunc(all, func(b *simBatch) bool { return b.id == after })
		all = all[i+1:] // an unknown cursor (i = -1) lists from the start
	}
	more := len(all) > limit
	all = all[:min(limit, len(all))]
	out := make([]batchObject, len(all))
	for i, b := range all {
		out[i] = b.object(now)
	}
	return out, more
}

// cancel starts cancelling a batch. It returns the batch, whether it
// exists, and the status that forbids cancelling, if any.
func (st *batchStore) cancel(id string, now time.Time) (batchObject, bool, string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.advance(now)
	b, ok := st.batches[id]
	if !ok {
		return batchObject{}, false, ""
	}
	switch b.status {
	case BatchValidating, BatchInProgress:
		from := b.status
		b.status, b.cancellingAt = BatchCancelling, now
		b.nextAt = now.Add(st.s.cfg.Batch.Cancelling)
		st.s.metrics.batchMoved(from, BatchCancelling)
	case BatchCancelling:
	default:
		return b.object(now), true, b.status
	}
	return b.object(now), true, ""
}

// lose forgets a batch, as a provider that lost it would.
func (st *batchStore) lose(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	b, ok := st.batches[id]
	if ok {
		st.forget(b)
	}
	return ok
}

// forget removes a batch, returning its enqueued tokens. Requires st.mu.
func (st *batchStore) forget(b *simBatch) {
	if b.enqueued() {
		st.enqueued -= b.tokens
	}
	st.s.metrics.batchMoved(b.status, "")
	delete(st.batches, b.id)
}

// advance makes every move due by now, earliest first. Requires st.mu.
func (st *batchStore) advance(now time.Time) {
	for {
		var next *simBatch
		for _, b := range st.batches {
			if !b.live() || b.nextAt.After(now) {
				continue
			}
			if next == nil || b.nextAt.Before(next.nextAt) || (b.nextAt.Equal(next.nextAt) && b.seq < next.seq) {
				next = b
			}
		}
		if next == nil {
			return
		}
		st.step(next)
	}
}

// step makes a batch's next move, at b.nextAt. Requires st.mu.
func (st *batchStore) step(b *simBatch) {
	at, from := b.nextAt, b.status
	switch b.status {
	case BatchValidating:
		st.validated(b, at)
	case BatchInProgress:
		if n := b.done(at); !at.Before(b.expiresAt) && n < len(b.lines) {
			b.status, b.expiredAt = BatchExpired, at
			st.end(b, at, n, "batch_expired", "This request could not be executed before the completion window expired.")
			break
		}
		b.status, b.finalizingAt = BatchFinalizing, at
		b.nextAt = at.Add(st.s.cfg.Batch.Finalizing + b.slowFinalize)
	case BatchFinalizing:
		b.status, b.completedAt = BatchCompleted, at
		st.end(b, at, len(b.lines), "", "")
	case BatchCancelling:
		n := b.done(at)
		b.status, b.cancelledAt = BatchCancelled, at
		st.end(b, at, n, "batch_cancelled", "This request was not executed because the batch was cancelled.")
	}
	if b.status != from {
		st.s.metrics.batchMoved(from, b.status)
	}
}

// validated ends a batch's validation: it fails, is lost, or starts.
// Requires st.mu.
func (st *batchStore) validated(b *simBatch, at time.Time) {
	cfg := st.s.cfg.Batch
	fail := func(errs []batchError) {
		b.status, b.failedAt, b.errors = BatchFailed, at, errs
	}
	if b.fail {
		fail([]batchError{{Code: "server_error", Message: "The batch failed because of an error on our side. Please try again."}})
		return
	}
	f, ok := st.files[b.inputFileID]
	if !ok {
		fail([]batchError{{Code: "invalid_file", Message: fmt.Sprintf("The input file %s no longer exists.", b.inputFileID)}})
		return
	}
	v := st.s.validateBatchFile(f.data, b.endpoint)
	if len(v.errors) > 0 {
		fail(v.errors)
		return
	}
	if cfg.EnqueuedTokens > 0 && st.enqueued+v.tokens > cfg.EnqueuedTokens {
		fail([]batchError{{Code: "token_limit_exceeded", Message: fmt.Sprintf(
			"Enqueued token limit reached for %s in organization org-embed-sim. Limit: %d enqueued tokens. Please try submitting your requests in smaller batches later.",
			v.model, cfg.EnqueuedTokens)}})
		return
	}
	if b.lose {
		st.s.metrics.batchMoved(b.status, "")
		delete(st.batches, b.id)
		return
	}
	b.model, b.lines, b.tokens = v.model, v.lines, v.tokens
	st.s.runLines(b.lines)
	b.status, b.inProgressAt = BatchInProgress, at
	st.enqueued += b.tokens
	b.inProgress = cfg.InProgress
	if b.expire {
		// Half the pace the window allows: half the lines are done when
		// it closes.
		b.inProgress = 2 * b.expiresAt.Sub(at)
	}
	b.nextAt = at.Add(b.inProgress)
	if b.nextAt.After(b.expiresAt) {
		b.nextAt = b.expiresAt
	}
}

// end closes a batch at t after its first finished lines ran: they go
// to the output or error file, and the others to the error file with code.
// Requires st.mu.
func (st *batchStore) end(b *simBatch, t time.Time, finished int, code, message string) {
	b.finished = finished
	st.enqueued -= b.tokens
	out, errs := st.s.writeResults(b, st.order(len(b.lines)), code, message, st.newID)
	if len(out) > 0 {
		b.outputFileID = st.addFileLocked(b.id+"_output.jsonl", purposeBatchOutput, out, t).id
	}
	if len(errs) > 0 {
		b.errorFileID = st.addFileLocked(b.id+"_error.jsonl", purposeBatchOutput, errs, t).id
	}
	st.s.metrics.batchLines(b)
}

// order is the order the lines of a file of n are written in. Requires
// st.mu.
func (st *batchStore) order(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	switch st.s.cfg.Batch.OutputOrder {
	case OrderReverse:
		slices.Reverse(idx)
	case OrderShuffle:
		st.rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}
