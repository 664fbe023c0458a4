package console

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Role is what a principal may do.
type Role string

// The two roles. An operator may do everything a viewer may.
const (
	// Viewer reads the console but never payload text, and never acts.
	Viewer Role = "viewer"
	// Operator also reveals chunk text (never an escalation's), replays,
	// pauses and resumes.
	Operator Role = "operator"
)

// DefaultAddr is Config.Addr's default: loopback only.
const DefaultAddr = "127.0.0.1:8090"

// Defaults of the other Config fields, written once for Config and the
// command line.
const (
	// DefaultStatementTimeout bounds every statement the console runs.
	DefaultStatementTimeout = 30 * time.Second
	// DefaultMaxSessions bounds the sign-ins kept at once.
	DefaultMaxSessions = 1000
	// DefaultCodeTTL is how long a one-time sign-in code stays valid.
	DefaultCodeTTL = 15 * time.Minute
)

// Token authenticates one principal.
type Token struct {
	// Principal names who holds the token in replay_audit.requested_by.
	Principal string
	// Role is what the token allows.
	Role Role
	// Secret is the token itself.
	Secret string
}

// Config configures a Server.
type Config struct {
	// Addr is where the console listens. Defaults to DefaultAddr
	// (loopback).
	Addr string
	// Tokens are the accepted tokens; at least one is required.
	Tokens []Token
	// PageSize is how many dead letters a list page shows. Defaults to 50.
	PageSize int
	// Refresh is how often the overview refreshes itself. Defaults to 5s.
	Refresh time.Duration
	// SessionTTL is how long a login lasts. Defaults to 12h.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept in memory; a sign-in beyond it
	// ends the oldest session. Defaults to DefaultMaxSessions.
	MaxSessions int
	// CodeTTL is how long a one-time sign-in code (IssueCode) stays
	// valid. Defaults to DefaultCodeTTL.
	CodeTTL time.Duration
	// StatementTimeout bounds every statement the console runs on
	// PostgreSQL (statement_timeout on its connections), so a slow query
	// cannot hold a connection for ever. Defaults to
	// DefaultStatementTimeout.
	StatementTimeout time.Duration
	// TrustProxy trusts the reverse proxy in front of the console: its
	// X-Forwarded-Proto: https marks the request as HTTPS (Secure
	// cookies, HSTS) and the last X-Forwarded-For address names the
	// client for login throttling. Set it only when every request comes
	// through that proxy. Defaults to false.
	TrustProxy bool
	// TLSCert and TLSKey, both set, make the console serve HTTPS itself
	// with that certificate and key (PEM files). Default to none: plain
	// HTTP.
	TLSCert, TLSKey string
	// Now is the clock of sessions, codes and login throttling. Defaults
	// to time.Now.
	Now func() time.Time
	// Log receives one line per request (method, path, status,
	// principal; never a query string). Defaults to zerolog.Nop().
	Log *zerolog.Logger
}

func (c *Config) applyDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.PageSize == 0 {
		c.PageSize = 50
	}
	if c.Refresh == 0 {
		c.Refresh = 5 * time.Second
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.CodeTTL == 0 {
		c.CodeTTL = DefaultCodeTTL
	}
	if c.StatementTimeout == 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		nop := zerolog.Nop()
		c.Log = &nop
	}
}

// minSecret is the shortest token accepted: anything shorter is guessable.
const minSecret = 16

// Validate says how to fix a configuration the console cannot serve. Zero
// values stand for their defaults.
func (c Config) Validate() error {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("console address %q: want host:port, e.g. %s: %w", c.Addr, DefaultAddr, err)
	}
	if len(c.Tokens) == 0 {
		return errors.New("no console tokens: set CONSOLE_OPERATOR_TOKEN and/or CONSOLE_VIEWER_TOKEN, or CONSOLE_TOKENS_FILE")
	}
	seen := map[string]bool{}
	for _, t := range c.Tokens {
		if t.Role != Viewer && t.Role != Operator {
			return fmt.Errorf("token of %q: role %q, want viewer or operator", t.Principal, t.Role)
		}
		if t.Principal == "" {
			return errors.New("a console token has no principal name: name who holds it, for the audit trail")
		}
		if len(t.Secret) < minSecret {
			return fmt.Errorf("token of %q is %d characters: use at least %d random ones (openssl rand -hex 24)", t.Principal, len(t.Secret), minSecret)
		}
		if seen[t.Secret] {
			return fmt.Errorf("token of %q is used twice: give every principal its own", t.Principal)
		}
		seen[t.Secret] = true
	}
	if c.PageSize < 0 || c.PageSize > 1000 {
		return fmt.Errorf("page size %d: want 1..1000 (0 for the default)", c.PageSize)
	}
	if c.MaxSessions < 0 {
		return fmt.Errorf("max sessions %d: want a positive number (0 for the default)", c.MaxSessions)
	}
	if c.StatementTimeout < 0 || c.CodeTTL < 0 || c.SessionTTL < 0 {
		return errors.New("console timeouts must not be negative (0 for the default)")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("console TLS needs both CONSOLE_TLS_CERT and CONSOLE_TLS_KEY, or neither")
	}
	return nil
}

// LoadTokens reads tokens from the environment: CONSOLE_TOKENS_FILE (one
// "role principal token" per line, # comments), CONSOLE_OPERATOR_TOKEN
// (principal "operator") and CONSOLE_VIEWER_TOKEN (principal "viewer").
func LoadTokens(lookup func(string) (string, bool)) ([]Token, error) {
	var out []Token
	if path, ok := lookup("CONSOLE_TOKENS_FILE"); ok && path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("CONSOLE_TOKENS_FILE: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			fields := strings.Fields(line)
			if len(fields) != 3 {
				return nil, fmt.Errorf("CONSOLE_TOKENS_FILE line %d: want \"role principal token\", got %d fields", n, len(fields))
			}
			out = append(out, Token{Role: Role(fields[0]), Principal: fields[1], Secret: fields[2]})
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("CONSOLE_TOKENS_FILE: %w", err)
		}
	}
	for _, e := range []struct {
		env  string
		role Role
	}{{"CONSOLE_OPERATOR_TOKEN", Operator}, {"CONSOLE_VIEWER_TOKEN", Viewer}} {
		if v, ok := lookup(e.env); ok && v != "" {
			out = append(out, Token{Role: e.role, Principal: string(e.role), Secret: v})
		}
	}
	return out, nil
}
