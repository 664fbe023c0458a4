package console

import (
	"crypto/sha256"
	"errors"
	"sync"
	"time"
)

// maxCodes bounds the one-time codes waiting to be used.
const maxCodes = 100

// codes are one-time sign-in codes: a link that carries one signs in once,
// within CodeTTL, so the long-lived token never travels in a URL (where
// proxies and browser history keep it). Codes are kept hashed.
type codes struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	m   map[[32]byte]code
}

// code is what a one-time code signs in as, and until when.
type code struct {
	token   Token
	expires time.Time
}

func newCodes(ttl time.Duration, now func() time.Time) *codes {
	return &codes{ttl: ttl, now: now, m: map[[32]byte]code{}}
}

func (c *codes) issue(t Token) string {
	secret := randomToken()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	dropExpired(c.m, now, codeExpires)
	evictOldest(c.m, maxCodes, codeExpires)
	c.m[sha256.Sum256([]byte(secret))] = code{token: t, expires: now.Add(c.ttl)}
	return secret
}

func codeExpires(v code) time.Time { return v.expires }

// redeem returns the token a code signs in as and forgets the code.
func (c *codes) redeem(secret string) (Token, bool) {
	h := sha256.Sum256([]byte(secret))
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[h]
	delete(c.m, h)
	if !ok || c.now().After(v.expires) {
		return Token{}, false
	}
	return v.token, true
}

// ErrNoSuchPrincipal is returned by IssueCode for a principal that holds
// no token.
var ErrNoSuchPrincipal = errors.New("no console token for that principal")

// IssueCode returns a one-time sign-in code for principal's token: GET
// /login?code=… signs in once, within Config.CodeTTL. It returns
// ErrNoSuchPrincipal when no token names principal.
func (s *Server) IssueCode(principal string) (string, error) {
	for _, t := range s.cfg.Tokens {
		if t.Principal == principal {
			return s.codes.issue(t), nil
		}
	}
	return "", ErrNoSuchPrincipal
}
