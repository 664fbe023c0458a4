package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// sessionCookie names the login session cookie over plain HTTP; over
// HTTPS it is secureSessionCookie, whose __Host- prefix makes browsers
// accept it only Secure, host-only and for the whole path.
const (
	sessionCookie       = "sluice_console"
	secureSessionCookie = "__Host-sluice_console"
)

// Principal is an authenticated caller.
type Principal struct {
	// Name is who it is, for the audit trail.
	Name string
	// Role is what it may do.
	Role Role
	// CSRF is the session's synchronizer token; empty for bearer callers,
	// which carry no ambient credential and need none.
	CSRF string
}

// Operator reports whether p may act and read payload text.
func (p Principal) Operator() bool { return p.Role == Operator }

type principalKey struct{}

func principalOf(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// tokenSet matches secrets in constant time: each candidate is hashed to a
// fixed length and every token is compared, so neither the length nor the
// position of a match shows in the timing.
type tokenSet struct {
	hashes [][32]byte
	tokens []Token
}

func newTokenSet(tokens []Token) *tokenSet {
	ts := &tokenSet{tokens: tokens}
	for _, t := range tokens {
		ts.hashes = append(ts.hashes, sha256.Sum256([]byte(t.Secret)))
	}
	return ts
}

func (ts *tokenSet) match(secret string) (Token, bool) {
	h := sha256.Sum256([]byte(secret))
	found := -1
	for i := range ts.hashes {
		if subtle.ConstantTimeCompare(h[:], ts.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Token{}, false
	}
	return ts.tokens[found], true
}

// session is one login.
type session struct {
	principal Principal
	expires   time.Time
}

// sessions are kept in memory: a restart logs everyone out, which is the
// safe direction. At most max are kept; a sign-in beyond that ends the
// oldest, so no number of sign-ins grows the table without bound.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	now func() time.Time
	m   map[string]session
}

func newSessions(ttl time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, max: max, now: now, m: map[string]session{}}
}

func (s *sessions) create(t Token) (id string, p Principal) {
	id, p = randomToken(), Principal{Name: t.Principal, Role: t.Role, CSRF: randomToken()}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	dropExpired(s.m, now, sessionExpires)
	// Every session lasts ttl, so the oldest expires first.
	evictOldest(s.m, s.max, sessionExpires)
	s.m[id] = session{principal: p, expires: now.Add(s.ttl)}
	return id, p
}

func sessionExpires(v session) time.Time { return v.expires }

func (s *sessions) get(id string) (Principal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	if !ok || s.now().After(v.expires) {
		delete(s.m, id)
		return Principal{}, false
	}
	return v.principal, true
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// authenticate finds the caller: a bearer token, else a session cookie.
// A bearer secret is a guess like a sign-in's, and is throttled alike:
// errThrottled while the client waits out its backoff.
func (s *Server) authenticate(r *http.Request) (Principal, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		secret, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return Principal{}, errUnauthenticated
		}
		t, err := s.tryToken(r, strings.TrimSpace(secret))
		if err != nil {
			return Principal{}, err
		}
		return Principal{Name: t.Principal, Role: t.Role}, nil
	}
	c, err := r.Cookie(s.cookieName(r))
	if err != nil {
		return Principal{}, errUnauthenticated
	}
	p, ok := s.sessions.get(c.Value)
	if !ok {
		return Principal{}, errUnauthenticated
	}
	return p, nil
}

// Why authenticate refused a request.
var (
	errUnauthenticated = errors.New("no valid credential")
	errThrottled       = errors.New("too many failed sign-ins from this client")
)

// tryToken matches a secret a client presents, under the client's login
// backoff: a failure lengthens it, a success clears it.
func (s *Server) tryToken(r *http.Request, secret string) (Token, error) {
	client := s.clientOf(r)
	if !s.throttle.allowed(client) {
		return Token{}, errThrottled
	}
	t, ok := s.tokens.match(secret)
	if !ok {
		s.throttle.failed(client)
		return Token{}, errUnauthenticated
	}
	s.throttle.succeeded(client)
	return t, nil
}

// sameOrigin rejects requests a browser sent on another site's behalf:
// Sec-Fetch-Site, when present, must be same-origin (or none: typed by the
// user), and Origin, when present, must be this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// checkCSRF guards a state-changing request: same origin, and, for a
// cookie session, the session's synchronizer token in the form field
// "csrf" or the X-CSRF-Token header.
func checkCSRF(r *http.Request, p Principal) bool {
	if !sameOrigin(r) {
		return false
	}
	if p.CSRF == "" {
		return true // bearer: no ambient credential to ride on
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(p.CSRF)) == 1
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, t Token) {
	id, _ := s.sessions.create(t)
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r), Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r), MaxAge: int(s.cfg.SessionTTL.Seconds())})
}

func (s *Server) clearSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(s.cookieName(r)); err == nil {
		s.sessions.drop(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r), Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
}

// cookieName is the session cookie's name for r: the __Host- one over
// HTTPS.
func (s *Server) cookieName(r *http.Request) string {
	if s.secure(r) {
		return secureSessionCookie
	}
	return sessionCookie
}

// NewSecret returns a fresh random token secret.
func NewSecret() string { return randomToken() }
