package embedsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/simtype"
)

// Server is the simulated embedding API. Use Handler to mount it anywhere,
// or Start/URL/Close to run it on its own listener. All methods are safe for
// concurrent use.
type Server struct {
	cfg     Config
	logger  zerolog.Logger
	now     func() time.Time
	started time.Time
	metrics *metrics
	log     *requestLog
	quota   *quota
	batches *batchStore
	handler http.Handler

	faults atomic.Pointer[faultSet]

	// mu guards the generator, the per-input sequence positions and the
	// outage override.
	mu          sync.Mutex
	rng         *rand.Rand
	seqPos      map[seqKey]int
	outageSet   bool
	outageFrom  time.Time
	outageUntil time.Time

	// baseCtx parents every request's context; Close cancels it.
	baseCtx        context.Context
	cancelRequests context.CancelFunc

	lifeMu sync.Mutex
	srv    *http.Server
	ln     net.Listener
	served chan struct{}
}

// seqKey identifies one input's walk through one sequence rule.
type seqKey struct {
	rule int
	text uint64
}

// New builds a Server from cfg, after applying defaults and validating it.
func New(cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	o := options{logger: zerolog.Nop(), now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.registry == nil {
		o.registry = prometheus.NewRegistry()
	}
	if o.now == nil {
		o.now = time.Now
	}
	fs, err := cfg.Faults.compile()
	if err != nil {
		return nil, fmt.Errorf("embedsim: %w", err)
	}
	s := &Server{
		cfg:     cfg,
		logger:  o.logger,
		now:     o.now,
		started: o.now(),
		metrics: newMetrics(o.registry),
		log:     newRequestLog(cfg.MaxRecords, cfg.RecordInputs, o.requestLog),
		quota:   newQuota(cfg.Quota, o.now()),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)),
		seqPos:  make(map[seqKey]int),
	}
	// Hanging handlers watch this context so that Close does not wait for
	// them to time out.
	s.baseCtx, s.cancelRequests = context.WithCancel(context.Background())
	s.faults.Store(fs)
	s.batches = newBatchStore(s)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", s.serveEmbeddings)
	mux.HandleFunc("POST /embeddings", s.serveEmbeddings)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("POST /v1/files", s.batchRoute("files", s.serveUpload))
	mux.HandleFunc("GET /v1/files", s.batchRoute("files", s.serveListFiles))
	mux.HandleFunc("GET /v1/files/{id}", s.batchRoute("file", s.serveFile))
	mux.HandleFunc("GET /v1/files/{id}/content", s.batchRoute("file_content", s.serveFileContent))
	mux.HandleFunc("DELETE /v1/files/{id}", s.batchRoute("file", s.serveDeleteFile))
	mux.HandleFunc("POST /v1/batches", s.batchRoute("batches", s.serveCreateBatch))
	mux.HandleFunc("GET /v1/batches", s.batchRoute("batches", s.serveListBatches))
	mux.HandleFunc("GET /v1/batches/{id}", s.batchRoute("batch", s.serveBatch))
	mux.HandleFunc("POST /v1/batches/{id}/cancel", s.batchRoute("batch_cancel", s.serveCancelBatch))
	mux.HandleFunc("GET /debug/requests", s.log.serveCounts)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{Registry: o.registry}))
	s.handler = mux
	return s, nil
}

// Handler returns the HTTP handler serving the whole API: /v1/embeddings,
// /v1/models, the Batch API (/v1/batches) and the Files API it uses
// (/v1/files), /metrics, /debug/requests and /healthz.
func (s *Server) Handler() http.Handler { return s.handler }

// Model returns the default model name.
func (s *Server) Model() string { return s.cfg.Model }

// Dims returns the default dimension.
func (s *Server) Dims() int { return s.cfg.Dims }

// SetFaults replaces the fault script. Per-input sequence positions restart
// from the first step. The outage window of f is relative to the server's
// start, and an explicit SetOutage is cleared.
func (s *Server) SetFaults(f Faults) error {
	fs, err := f.compile()
	if err != nil {
		return fmt.Errorf("embedsim: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.Store(fs)
	clear(s.seqPos)
	s.outageSet = false
	return nil
}

// SetOutage makes every request arriving in [from, until) get a 503,
// overriding the configured outage window. A zero until clears the override
// and disables outages until the next SetFaults.
func (s *Server) SetOutage(from, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outageSet = true
	s.outageFrom, s.outageUntil = from, until
}

// inOutage reports whether t falls in the outage window. Requires s.mu.
func (s *Server) inOutage(fs *faultSet, t time.Time) bool {
	from, until := s.outageFrom, s.outageUntil
	if !s.outageSet {
		if fs.OutageDuration == 0 {
			return false
		}
		from = s.started.Add(fs.OutageStart)
		until = from.Add(fs.OutageDuration)
	}
	return !t.Before(from) && t.Before(until)
}

// Requests returns the most recent requests (up to Config.MaxRecords),
// oldest first.
func (s *Server) Requests() []simtype.RequestRecord { return s.log.records() }

// Seen reports whether any request has contained text.
func (s *Server) Seen(text string) bool { return s.log.count(text) > 0 }

// SeenCount returns how many times text has been received, counting every
// request that contained it.
func (s *Server) SeenCount(text string) int { return s.log.count(text) }

// Counts summarises everything received so far; GET /debug/requests serves
// the same as JSON.
func (s *Server) Counts() RequestCounts { return s.log.counts() }

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background
// until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("embedsim: listen: %w", err)
	}
	return s.Serve(ln)
}

// Serve serves on ln in the background until Close. The server owns ln.
func (s *Server) Serve(ln net.Listener) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.srv != nil {
		_ = ln.Close()
		return errors.New("embedsim: already started")
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
	}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error().Err(err).Msg("embedsim: serve")
		}
	}()
	return nil
}

// Addr returns the listening address, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// URL returns the base URL clients should use, such as
// "http://127.0.0.1:41234" (without /v1), or "" before Start.
func (s *Server) URL() string {
	addr := s.Addr()
	if addr == nil {
		return ""
	}
	return "http://" + addr.String()
}

// Close stops serving: in-flight requests, hangs included, are cut short,
// and Close waits up to five seconds for them to finish.
func (s *Server) Close() error {
	s.cancelRequests()
	s.lifeMu.Lock()
	srv, served := s.srv, s.served
	s.lifeMu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = srv.Close()
	}
	<-served
	return err
}
