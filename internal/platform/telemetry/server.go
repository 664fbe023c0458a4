package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Check is one readiness probe: it returns nil when the dependency answers.
// A failure's error is logged as it is, so Fn returns it with any secret
// it could carry (a connection URL's password) already redacted, as
// config.RedactError does.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Server serves /metrics, /healthz and /readyz.
type Server struct {
	reg    prometheus.Gatherer
	log    zerolog.Logger
	mu     sync.Mutex
	checks []Check
}

// NewServer returns a server exposing reg with the given readiness checks.
func NewServer(reg prometheus.Gatherer, log zerolog.Logger, checks ...Check) *Server {
	return &Server{reg: reg, log: log, checks: checks}
}

// AddCheck adds a readiness check.
func (s *Server) AddCheck(c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, c)
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.ready)
	return mux
}

// Answers of /readyz for each named check.
const (
	// Ready is the answer for a dependency that answered its check.
	Ready = "ok"
	// Unavailable is the answer for one that did not; the reason is logged
	// at warn level, never served.
	Unavailable = "unavailable"
)

// ready answers /readyz: 200 when every check passes, else 503, with a JSON
// object mapping each check's name to Ready or Unavailable.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	s.mu.Lock()
	checks := append([]Check(nil), s.checks...)
	s.mu.Unlock()
	status := http.StatusOK
	result := map[string]string{}
	for _, c := range checks {
		if err := c.Fn(ctx); err != nil {
			// The probe's caller may be anyone who can reach the port: it
			// learns which dependency is down, the log keeps why.
			status = http.StatusServiceUnavailable
			result[c.Name] = Unavailable
			s.log.Warn().Str("check", c.Name).Err(err).Msg("readiness check failed")
			continue
		}
		result[c.Name] = Ready
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(result)
}

// ListenAndServe serves on addr until ctx is done. An empty addr disables
// the server. The listener is bound before it returns, so a bad address
// fails the service at startup, not later.
func (s *Server) ListenAndServe(ctx context.Context, addr string) (wait func() error, err error) {
	if addr == "" {
		return func() error { return nil }, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return s.Serve(ctx, l), nil
}

// Serve serves on l until ctx is done; the returned function waits for the
// server to stop.
func (s *Server) Serve(ctx context.Context, l net.Listener) func() error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	s.log.Info().Str("addr", l.Addr().String()).Msg("serving metrics and health")
	return func() error { return <-done }
}
