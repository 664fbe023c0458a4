package console_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/console"
)

// noRedirects is a client that reports redirects instead of following
// them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// signInForm posts the sign-in form with header set, and returns the
// response without following its redirect.
func (b *testBundle) signInForm(t *testing.T, secret, next string, header map[string]string) *http.Response {
	t.Helper()
	form := url.Values{"token": {secret}}
	if next != "" {
		form.Set("next", next)
	}
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// withCookie fetches path with cookie and header set, returning the
// status.
func (b *testBundle) withCookie(t *testing.T, path string, c *http.Cookie, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	req.AddCookie(c)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func sessionOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %d, cookies %v; want 303 with one session cookie", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// After sign-in the console goes only to a path of its own: whatever a
// link puts in next, a browser never leaves the site.
func TestSignInNextStaysOnTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, next := range []string{
		"/\t/evil.example/", "/\n/evil.example/", "/\r/evil.example/", "//evil.example/", "/\\evil.example/", "/\\/evil.example/",
		"https://evil.example/", "javascript:alert(1)", "evil.example", " /dead-letters", "/dead-letters\x00",
	} {
		resp := b.signInForm(t, operatorSecret, next, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Errorf("next %q: %d to %q; want 303 to /", next, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, next := range []string{"/dead-letters?source=alpha&state=all", "/dead-letters/" + b.alphaID} {
		if loc := b.signInForm(t, operatorSecret, next, nil).Header.Get("Location"); loc != next {
			t.Errorf("next %q: went to %q; want it kept", next, loc)
		}
	}
}

// The long-lived token never signs in from a URL, so another site cannot
// sign a browser in with a link, and the token stays out of proxy logs; a
// one-time code does, once and before it expires.
func TestSignInByLinkTakesOnlyOneTimeCodes(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	b := setupWith(t, func(c *console.Config) { c.Now = clk.Now })
	resp, err := noRedirects.Get(b.srv.URL + "/login?token=" + operatorSecret)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther || len(resp.Cookies()) != 0 {
		t.Fatalf("GET /login?token=: %d, cookies %v; want the form and no session", resp.StatusCode, resp.Cookies())
	}
	code, err := b.console.IssueCode(operatorName)
	if err != nil {
		t.Fatal(err)
	}
	get := func(code string) *http.Response {
		resp, err := noRedirects.Get(b.srv.URL + "/login?code=" + code)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	session := sessionOf(t, get(code))
	if st := b.withCookie(t, "/", session, nil); st != http.StatusOK {
		t.Errorf("overview with the code's session: %d; want 200", st)
	}
	if resp := get(code); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("the same code again: %d; want 401 and no session", resp.StatusCode)
	}
	clk.Advance(time.Second) // the used code's failure backoff
	late, _ := b.console.IssueCode(viewerName)
	clk.Advance(console.DefaultCodeTTL + time.Second)
	if resp := get(late); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("an expired code: %d; want 401 and no session", resp.StatusCode)
	}
	if _, err := b.console.IssueCode("nobody"); !errors.Is(err, console.ErrNoSuchPrincipal) {
		t.Errorf("code for an unknown principal: %v; want ErrNoSuchPrincipal", err)
	}
}

// Behind a TLS proxy that the console is told to trust, the session
// cookie is Secure with the __Host- prefix and responses carry HSTS; a
// console that does not trust the proxy ignores its header.
func TestSessionCookieSecureBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	https := map[string]string{"X-Forwarded-Proto": "https"}
	trusting := setupWith(t, func(c *console.Config) { c.TrustProxy = true })
	resp := trusting.signInForm(t, operatorSecret, "", https)
	c := sessionOf(t, resp)
	if c.Name != "__Host-sluice_console" || !c.Secure || !c.HttpOnly || c.Path != "/" || c.Domain != "" {
		t.Errorf("cookie behind a trusted TLS proxy: %+v; want __Host-sluice_console, Secure, HttpOnly, Path=/, no Domain", c)
	}
	if h := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(h, "max-age=") {
		t.Errorf("HSTS behind a trusted TLS proxy: %q; want max-age", h)
	}
	if st := trusting.withCookie(t, "/", c, https); st != http.StatusOK {
		t.Errorf("overview with the secure session: %d; want 200", st)
	}

	plain := setup(t)
	resp = plain.signInForm(t, operatorSecret, "", https)
	c = sessionOf(t, resp)
	if c.Name != "sluice_console" || c.Secure || resp.Header.Get("Strict-Transport-Security") != "" {
		t.Errorf("X-Forwarded-Proto from an untrusted client: cookie %+v, HSTS %q; want it ignored", c, resp.Header.Get("Strict-Transport-Security"))
	}
}

// With CONSOLE_TLS_CERT and CONSOLE_TLS_KEY the console serves HTTPS
// itself, with the Secure cookie and HSTS; in plain HTTP beyond loopback
// it warns, and on loopback or behind a trusted proxy it does not.
func TestServeTLSAndPlainHTTPWarning(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSigned(t)
	b := setup(t)
	serve := func(host string, adjust func(*console.Config)) (string, *testenv.Buffer) {
		t.Helper()
		buf := &testenv.Buffer{}
		log := zerolog.New(buf)
		cfg := console.Config{Tokens: []console.Token{{Principal: operatorName, Role: console.Operator, Secret: operatorSecret}}, Log: &log}
		if adjust != nil {
			adjust(&cfg)
		}
		srv, err := console.New(cfg, b.db.Pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		t.Cleanup(func() { cancel(); <-done; srv.Close() })
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		return port, buf
	}
	port, _ := serve("127.0.0.1", func(c *console.Config) { c.TLSCert, c.TLSKey = certFile, keyFile })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm("https://127.0.0.1:"+port+"/login", url.Values{"token": {operatorSecret}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := sessionOf(t, resp); c.Name != "__Host-sluice_console" || !c.Secure || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("over the console's own TLS: cookie %+v, HSTS %q; want __Host-, Secure and HSTS", c, resp.Header.Get("Strict-Transport-Security"))
	}

	for _, tc := range []struct {
		name, host string
		adjust     func(*console.Config)
		warn       bool
	}{
		{"plain HTTP on every address", "0.0.0.0", nil, true},
		{"plain HTTP on loopback", "127.0.0.1", nil, false},
		{"behind a trusted proxy", "0.0.0.0", func(c *console.Config) { c.TrustProxy = true }, false},
	} {
		port, buf := serve(tc.host, tc.adjust)
		// An answer means Serve is past its warning.
		if resp, err := http.Get("http://127.0.0.1:" + port + "/login"); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
		if got := strings.Contains(buf.String(), "plain HTTP"); got != tc.warn {
			t.Errorf("%s: warned %v; want %v (log %q)", tc.name, got, tc.warn, buf.String())
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// them with a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "console-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// A client that guesses wrong waits, twice as long after every failure,
// before its next guess counts, by form or by bearer header; the wait is
// per client, and X-Forwarded-For names the client only behind a trusted
// proxy.
func TestSignInBackoffPerClient(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	b := setupWith(t, func(c *console.Config) { c.Now = clk.Now })
	if resp := b.signInForm(t, "wrong-secret-0123456789", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d; want 401", resp.StatusCode)
	}
	resp := b.signInForm(t, operatorSecret, "", nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || len(resp.Cookies()) != 0 {
		t.Fatalf("right token at once after a wrong one: %d, Retry-After %q; want 429 after 1s and no session", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Another X-Forwarded-For is the same client when no proxy is trusted.
	if resp := b.signInForm(t, operatorSecret, "", map[string]string{"X-Forwarded-For": "203.0.113.9"}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a spoofed X-Forwarded-For: %d; want 429", resp.StatusCode)
	}
	if code, _ := b.get(t, "/", operatorSecret); code != http.StatusTooManyRequests {
		t.Errorf("bearer while backing off: %d; want 429", code)
	}
	clk.Advance(time.Second)
	if code, _ := b.get(t, "/", "wrong-secret-0123456789"); code != http.StatusUnauthorized {
		t.Fatalf("second wrong guess: %d; want 401", code)
	}
	clk.Advance(time.Second)
	if resp := b.signInForm(t, operatorSecret, "", nil); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("1s after the second failure: %d, Retry-After %q; want 429 for 1s more", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	clk.Advance(time.Second)
	sessionOf(t, b.signInForm(t, operatorSecret, "", nil))
	if resp := b.signInForm(t, "wrong-secret-0123456789", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong guess after a success: %d; want 401, the backoff cleared", resp.StatusCode)
	}

	proxied := setupWith(t, func(c *console.Config) { c.Now = clk.Now; c.TrustProxy = true })
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": "198.51.100.1, " + ip} }
	if resp := proxied.signInForm(t, "wrong-secret-0123456789", "", from("192.0.2.1")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token via the proxy: %d; want 401", resp.StatusCode)
	}
	if resp := proxied.signInForm(t, operatorSecret, "", from("192.0.2.1")); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("same client via the proxy: %d; want 429", resp.StatusCode)
	}
	sessionOf(t, proxied.signInForm(t, operatorSecret, "", from("192.0.2.2")))
}

// Sessions are bounded: a sign-in beyond the bound ends the oldest.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	b := setupWith(t, func(c *console.Config) { c.Now = clk.Now; c.MaxSessions = 2 })
	var cookies []*http.Cookie
	for range 3 {
		cookies = append(cookies, sessionOf(t, b.signInForm(t, operatorSecret, "", nil)))
		clk.Advance(time.Second)
	}
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK, http.StatusOK} {
		if st := b.withCookie(t, "/fragment/overview", cookies[i], nil); st != want {
			t.Errorf("session %d of 3 with a bound of 2: %d; want %d", i+1, st, want)
		}
	}
}
