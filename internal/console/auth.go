package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// sessionCookie names the login session cookie.
const sessionCookie = "sluice_console"

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
// safe direction.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	m   map[string]session
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, m: map[string]session{}}
}

func (s *sessions) create(t Token) (id string, p Principal) {
	id, p = randomToken(), Principal{Name: t.Principal, Role: t.Role, CSRF: randomToken()}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, v := range s.m {
		if now.After(v.expires) {
			delete(s.m, k)
		}
	}
	s.m[id] = session{principal: p, expires: now.Add(s.ttl)}
	return id, p
}

func (s *sessions) get(id string) (Principal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	if !ok || time.Now().After(v.expires) {
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
func (s *Server) authenticate(r *http.Request) (Principal, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		secret, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return Principal{}, false
		}
		t, ok := s.tokens.match(strings.TrimSpace(secret))
		return Principal{Name: t.Principal, Role: t.Role}, ok
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return Principal{}, false
	}
	return s.sessions.get(c.Value)
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
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(s.cfg.SessionTTL.Seconds())})
}

// NewSecret returns a fresh random token secret.
func NewSecret() string { return randomToken() }
