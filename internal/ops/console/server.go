package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
)

//go:embed web
var webFS embed.FS

// maxBody bounds every request body: the largest form is a filter and a
// reason.
const maxBody = 64 << 10

// Server is the triage console.
type Server struct {
	cfg      Config
	pool     *pgxpool.Pool
	js       jetstream.JetStream
	tokens   *tokenSet
	sessions *sessions
	codes    *codes
	throttle *throttle
	pages    map[string]*template.Template
	mux      *http.ServeMux
	overview overviewCache
}

// New returns a console over the database pool reaches. The console
// opens its own pool with pool's settings and Config.StatementTimeout on
// every connection; Close closes it. js reaches JetStream for replays and
// the replay durable; with nil js the console reads but cannot replay,
// pause or resume.
func New(cfg Config, pool *pgxpool.Pool, js jetstream.JetStream) (*Server, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, js: js, tokens: newTokenSet(cfg.Tokens),
		sessions: newSessions(cfg.SessionTTL, cfg.MaxSessions, cfg.Now),
		codes:    newCodes(cfg.CodeTTL, cfg.Now), throttle: newThrottle(cfg.Now)}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	pcfg := pool.Config()
	if pcfg.ConnConfig.RuntimeParams == nil {
		pcfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	pcfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	if s.pool, err = pgxpool.NewWithConfig(context.Background(), pcfg); err != nil {
		return nil, fmt.Errorf("console database pool: %w", err)
	}
	s.routes()
	return s, nil
}

// Close closes the console's database pool, after Serve returned.
func (s *Server) Close() { s.pool.Close() }

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.Handle("POST /logout", s.action(false, s.logout))
	m.Handle("GET /{$}", s.read(s.overviewPage))
	m.Handle("GET /fragment/overview", s.read(s.overviewFragment))
	m.Handle("GET /dead-letters", s.read(s.listPage))
	m.Handle("GET /dead-letters/{id}", s.read(s.letterPage))
	m.Handle("GET /dead-letters/{id}/file", s.read(s.keptFileBody))
	m.Handle("POST /dead-letters/{id}/correct", s.action(true, s.correct))
	m.Handle("POST /dead-letters/{id}/keyed-text", s.action(true, s.keyedTextBody))
	m.Handle("POST /replay/dry-run", s.action(true, s.replayDialog))
	m.Handle("POST /replay", s.action(true, s.replayExecute))
	m.Handle("POST /replay/pause", s.action(true, s.pause))
	m.Handle("POST /replay/resume", s.action(true, s.resume))
	m.Handle("GET /documents/{doc_id}", s.read(s.documentPage))
	m.Handle("GET /runs", s.read(s.runsPage))
	m.Handle("GET /runs/{id}", s.read(s.runPage))
	m.Handle("GET /batches", s.read(s.batchesPage))
	m.Handle("GET /sources", s.read(s.sourcesPage))
	m.Handle("GET /audit", s.read(s.auditPage))
	s.mux = m
}

// Handler returns the console's HTTP handler.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h := w.Header()
		// Every page may carry payload fields; none may be cached.
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: with no-referrer browsers send
		// "Origin: null" on form posts, which the CSRF check must refuse.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if s.secure(r) {
			h.Set("Strict-Transport-Security", hsts)
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		s.mux.ServeHTTP(rec, r)
		// The path only: a query string may hold a payload search.
		s.cfg.Log.Info().Str("method", r.Method).Str("path", r.URL.Path).Int("status", rec.status).
			Str("principal", rec.principal).Dur("took", time.Since(start)).Msg("console request")
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status    int
	principal string
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) noteCaller(w http.ResponseWriter, p Principal) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.principal = p.Name
	}
}

// read wraps a handler any authenticated principal may call.
func (s *Server) read(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if errors.Is(err, errThrottled) {
			s.throttled(w, r)
			return
		}
		if err != nil {
			s.unauthorized(w, r)
			return
		}
		s.noteCaller(w, p)
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// action wraps a state-changing handler: CSRF-checked, and operator-only
// when operatorOnly.
func (s *Server) action(operatorOnly bool, h http.HandlerFunc) http.Handler {
	return s.read(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r.Context())
		if !checkCSRF(r, p) {
			s.fail(w, r, http.StatusForbidden, "Refused: this request did not come from the console's own page (CSRF check).")
			return
		}
		if operatorOnly && !p.Operator() {
			s.fail(w, r, http.StatusForbidden, "This needs the operator role.")
			return
		}
		h(w, r)
	})
}

// throttled answers a client that must wait out its login backoff.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request) {
	wait := s.throttle.retryAfter(s.clientOf(r))
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	s.render(w, r, http.StatusTooManyRequests, "login.html", page{Title: "Sign in",
		Data: loginData{Error: fmt.Sprintf("Too many failed sign-ins from here: wait %s and try again.", wait.Round(time.Second))}})
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="sluice console"`)
	s.render(w, r, http.StatusUnauthorized, "login.html", page{Title: "Sign in", Data: loginData{Next: r.URL.Path}})
}

// ListenAndServe serves on cfg.Addr until ctx is done.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("console listen %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then shuts down gracefully: HTTPS
// with Config.TLSCert and TLSKey, else plain HTTP, which it warns about on
// an address other than loopback unless a trusted proxy terminates TLS.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 32 << 10}
	if s.cfg.plainOnOpenAddress(ln.Addr()) {
		s.cfg.Log.Warn().Str("addr", ln.Addr().String()).Msg("console serves plain HTTP beyond loopback: session cookies are not Secure; " +
			"set CONSOLE_TLS_CERT and CONSOLE_TLS_KEY, or put it behind a TLS proxy and set CONSOLE_TRUST_PROXY=true")
	}
	done := make(chan error, 1)
	go func() {
		if s.cfg.tls() {
			done <- srv.ServeTLS(ln, s.cfg.TLSCert, s.cfg.TLSKey)
			return
		}
		done <- srv.Serve(ln)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
