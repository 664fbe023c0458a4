package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
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
	pages    map[string]*template.Template
	mux      *http.ServeMux
	overview overviewCache
}

// New returns a console over pool. js reaches JetStream for replays and
// the replay durable; with nil js the console reads but cannot replay,
// pause or resume.
func New(cfg Config, pool *pgxpool.Pool, js jetstream.JetStream) (*Server, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, pool: pool, js: js, tokens: newTokenSet(cfg.Tokens), sessions: newSessions(cfg.SessionTTL)}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

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
	m.Handle("GET /replay", s.operator(s.replayDialog))
	m.Handle("POST /replay", s.action(true, s.replayExecute))
	m.Handle("POST /replay/pause", s.action(true, s.pause))
	m.Handle("POST /replay/resume", s.action(true, s.resume))
	m.Handle("GET /runs", s.read(s.runsPage))
	m.Handle("GET /runs/{id}", s.read(s.runPage))
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
		p, ok := s.authenticate(r)
		if !ok {
			s.unauthorized(w, r)
			return
		}
		s.noteCaller(w, p)
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// operator wraps a read-only handler only operators may call.
func (s *Server) operator(h http.HandlerFunc) http.Handler {
	return s.read(func(w http.ResponseWriter, r *http.Request) {
		if !principalOf(r.Context()).Operator() {
			s.fail(w, r, http.StatusForbidden, "This needs the operator role.")
			return
		}
		h(w, r)
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

// Serve serves on ln until ctx is done, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 32 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
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
