package console

import (
	"net"
	"net/http"
	"strings"
)

// hsts is the Strict-Transport-Security of HTTPS responses: a year, this
// host only.
const hsts = "max-age=31536000"

// secure reports whether r reached the console over HTTPS: directly
// (CONSOLE_TLS_CERT) or, with TrustProxy, through a proxy that says so.
func (s *Server) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.cfg.TrustProxy && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// clientOf names the client of r for login throttling: its address, or,
// with TrustProxy, the address the proxy appended last to
// X-Forwarded-For (the earlier ones are whatever the client sent).
func (s *Server) clientOf(r *http.Request) string {
	if s.cfg.TrustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if ip := net.ParseIP(strings.TrimSpace(hops[len(hops)-1])); ip != nil {
				return ip.String()
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tls reports whether the console serves HTTPS itself.
func (c Config) tls() bool { return c.TLSCert != "" && c.TLSKey != "" }

// plainOnOpenAddress reports whether the console would serve session
// cookies in the clear beyond this machine: plain HTTP, no trusted TLS
// proxy, and an address other than loopback.
func (c Config) plainOnOpenAddress(addr net.Addr) bool {
	if c.tls() || c.TrustProxy {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return true
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
