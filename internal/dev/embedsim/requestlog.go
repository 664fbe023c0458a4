package embedsim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/dev/simtype"
)

// record is the in-memory form: digests stay binary until someone asks.
type record struct {
	time     time.Time
	hashes   [][sha256.Size]byte
	texts    []string
	tokens   int
	status   int
	fault    string
	duration time.Duration
}

func (r *record) export() simtype.RequestRecord {
	out := simtype.RequestRecord{
		Time:        r.time,
		Inputs:      len(r.hashes),
		InputSHA256: make([]string, len(r.hashes)),
		Texts:       r.texts,
		Tokens:      r.tokens,
		Status:      r.status,
		Fault:       r.fault,
		Duration:    r.duration,
	}
	for i, h := range r.hashes {
		out.InputSHA256[i] = hex.EncodeToString(h[:])
	}
	return out
}

// requestLog remembers requests: a bounded ring of records plus unbounded
// per-input counts, which is what duplicate detection needs.
type requestLog struct {
	mu       sync.Mutex
	max      int
	ring     []*record
	next     int
	seen     map[[sha256.Size]byte]uint32
	requests int
	inputs   int
	byStatus map[int]int
	byFault  map[string]int
	out      io.Writer
	keepText bool
}

func newRequestLog(maxRecords int, keepText bool, out io.Writer) *requestLog {
	return &requestLog{
		max:      max(maxRecords, 0),
		seen:     make(map[[sha256.Size]byte]uint32),
		byStatus: make(map[int]int),
		byFault:  make(map[string]int),
		out:      out,
		keepText: keepText,
	}
}

// begin records a request as it arrives, so that Seen is true even while
// the request is still being answered.
func (l *requestLog) begin(at time.Time, inputs []string) *record {
	rec := &record{time: at, hashes: make([][sha256.Size]byte, len(inputs))}
	for i, in := range inputs {
		rec.hashes[i] = sha256.Sum256([]byte(in))
	}
	if l.keepText {
		rec.texts = append([]string(nil), inputs...)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	l.inputs += len(inputs)
	for _, h := range rec.hashes {
		l.seen[h]++
	}
	if l.max > 0 {
		if len(l.ring) < l.max {
			l.ring = append(l.ring, rec)
		} else {
			l.ring[l.next] = rec
			l.next = (l.next + 1) % l.max
		}
	}
	return rec
}

// setTokens records the request's token count.
func (l *requestLog) setTokens(rec *record, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec.tokens = n
}

// finish stamps the outcome and appends the record to the JSONL output.
func (l *requestLog) finish(rec *record, status int, fault string, d time.Duration) {
	l.mu.Lock()
	rec.status, rec.fault, rec.duration = status, fault, d
	l.byStatus[status]++
	if fault != "" {
		l.byFault[fault]++
	}
	out := l.out
	l.mu.Unlock()
	if out == nil {
		return
	}
	line, err := json.Marshal(rec.export())
	if err != nil {
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	// One Write per line keeps lines whole even if the process is killed.
	_, _ = out.Write(line)
}

func (l *requestLog) records() []simtype.RequestRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]simtype.RequestRecord, 0, len(l.ring))
	for i := range l.ring {
		out = append(out, l.ring[(l.next+i)%len(l.ring)].export())
	}
	return out
}

func (l *requestLog) count(text string) int {
	h := sha256.Sum256([]byte(text))
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.seen[h])
}

// RequestCounts summarises everything the server has received.
type RequestCounts struct {
	// Requests is the number of embeddings requests received.
	Requests int `json:"requests"`
	// Inputs is the number of inputs across them.
	Inputs int `json:"inputs"`
	// DistinctInputs is the number of different input texts.
	DistinctInputs int `json:"distinct_inputs"`
	// RepeatedInputs is the number of different texts received more than
	// once (retries, redeliveries, replays).
	RepeatedInputs int `json:"repeated_inputs"`
	// ByStatus counts answered requests by HTTP status ("0": no answer).
	ByStatus map[string]int `json:"by_status"`
	// ByFault counts requests by the injected fault that decided them.
	ByFault map[string]int `json:"by_fault"`
}

func (l *requestLog) counts() RequestCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := RequestCounts{
		Requests:       l.requests,
		Inputs:         l.inputs,
		DistinctInputs: len(l.seen),
		ByStatus:       make(map[string]int, len(l.byStatus)),
		ByFault:        make(map[string]int, len(l.byFault)),
	}
	for _, n := range l.seen {
		if n > 1 {
			c.RepeatedInputs++
		}
	}
	for s, n := range l.byStatus {
		c.ByStatus[strconv.Itoa(s)] = n
	}
	for f, n := range l.byFault {
		c.ByFault[f] = n
	}
	return c
}

// serveCounts serves the counts, or with ?input_sha256= the requests that
// carried one input (the drill reads its inputs' histories there).
func (l *requestLog) serveCounts(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if h := r.URL.Query().Get("input_sha256"); h != "" {
		_ = json.NewEncoder(w).Encode(simtype.RequestsFor{InputSHA256: h, Requests: l.carrying(h)})
		return
	}
	_ = json.NewEncoder(w).Encode(l.counts())
}

// carrying returns the remembered requests that held the input whose hex
// SHA-256 is h, oldest first.
func (l *requestLog) carrying(h string) []simtype.RequestRecord {
	out := []simtype.RequestRecord{}
	for _, rec := range l.records() {
		for _, in := range rec.InputSHA256 {
			if in == h {
				out = append(out, rec)
				break
			}
		}
	}
	return out
}
