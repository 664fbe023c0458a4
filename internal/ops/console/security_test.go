package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/ops/console"
)

func TestEveryPageNeedsAToken(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Now())
	b := setupWith(t, func(c *console.Config) { c.Now = clk.Now })
	for _, path := range []string{"/", "/fragment/overview", "/dead-letters", "/dead-letters/" + b.alphaID, "/runs", "/runs/run-alpha", "/documents/" + alphaDoc(0), "/audit"} {
		if code, body := b.get(t, path, ""); code != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) {
			t.Errorf("GET %s without a token: %d; want 401 and the sign-in form", path, code)
		}
		if code, _ := b.get(t, path, "not-a-valid-token-at-all"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d; want 401", path, code)
		}
		clk.Advance(time.Hour) // past the wrong guess's backoff
		if code, _ := b.get(t, path, viewerSecret); code != http.StatusOK {
			t.Errorf("GET %s as viewer: %d; want 200", path, code)
		}
	}
	for _, path := range []string{"/replay/dry-run", "/replay"} {
		if code, _ := b.post(t, path, "", url.Values{"source": {"alpha"}, "reason": {"x"}}); code != http.StatusUnauthorized {
			t.Errorf("POST %s without a token: %d; want 401", path, code)
		}
	}
}

func TestViewerCannotAct(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/replay/dry-run", "/replay", "/replay/pause", "/replay/resume"} {
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader("source=alpha&reason=because"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+viewerSecret)
		if code, _ := do(t, req); code != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d; want 403", path, code)
		}
	}
	if code, _ := b.get(t, "/dead-letters/"+b.alphaID+"?text=1", viewerSecret); code != http.StatusForbidden {
		t.Errorf("viewer asking for chunk text: %d; want 403", code)
	}
	code, body := b.get(t, "/dead-letters?ptext="+url.QueryEscape(needle), viewerSecret)
	if code != http.StatusOK || !strings.Contains(body, "Payload and error detail searches are for operators") || !strings.Contains(body, `id="matched">151<`) {
		t.Errorf("viewer payload search: %d; want it ignored (151 open dead letters match)", code)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit`); n != 0 {
		t.Errorf("%d audit rows after refused actions; want 0", n)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestForgedCrossSitePostRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.PostForm(b.srv.URL+"/login", url.Values{"token": {operatorSecret}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	u, _ := url.Parse(b.srv.URL)
	for _, c := range jar.Cookies(u) {
		cookie = c
	}
	if cookie == nil {
		t.Fatal("sign-in set no cookie")
	}
	if set := resp.Request.Response.Header.Get("Set-Cookie"); !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Strict") {
		t.Errorf("session cookie %q; want HttpOnly and SameSite=Strict", set)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/", nil)
	req.AddCookie(cookie)
	_, page := do(t, req)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the overview carries no CSRF token")
	}
	token := m[1]
	post := func(form url.Values, header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/replay/pause", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, tc := range map[string]struct {
		form   url.Values
		header map[string]string
	}{
		"another origin":       {url.Values{"csrf": {token}, "reason": {"x"}}, map[string]string{"Origin": "https://evil.example"}},
		"cross-site fetch":     {url.Values{"csrf": {token}, "reason": {"x"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"no synchronizer":      {url.Values{"reason": {"x"}}, map[string]string{"Origin": b.srv.URL}},
		"wrong synchronizer":   {url.Values{"csrf": {token + "x"}, "reason": {"x"}}, map[string]string{"Origin": b.srv.URL}},
		"null origin (iframe)": {url.Values{"csrf": {token}, "reason": {"x"}}, map[string]string{"Origin": "null"}},
	} {
		if code := post(tc.form, tc.header); code != http.StatusForbidden {
			t.Errorf("%s: %d; want 403", name, code)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit`); n != 0 {
		t.Fatalf("%d audit rows after forged posts; want 0", n)
	}
	// The same request from the console's own page goes through.
	if code := post(url.Values{"csrf": {token}, "reason": {"drill"}}, map[string]string{"Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusSeeOther {
		t.Errorf("same-origin pause with the token: %d; want 303", code)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'pause' AND requested_by = $1`, operatorName); n != 1 {
		t.Errorf("%d pause audit rows by %s; want 1", n, operatorName)
	}
}

func TestEscalatedTextNeverShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := url.QueryEscape
	paths := []string{
		"/", "/fragment/overview", "/runs", "/runs/run-beta", "/audit",
		"/dead-letters", "/dead-letters?state=all", "/dead-letters?source=beta&disposition=escalate",
		// Searches use part of the secret: the page echoes the query.
		"/dead-letters?ptext=" + q("card SECRET-PAN"), "/dead-letters?ptext=SECRET-PAN", "/dead-letters?q=" + q("SECRET-PAN-4111"),
		"/dead-letters/" + b.escID, "/dead-letters/" + b.escID + "?text=1",
	}
	for _, secret := range []string{operatorSecret, viewerSecret} {
		for _, p := range paths {
			b.get(t, p, secret)
		}
		for _, form := range []url.Values{{"source": {"beta"}}, {"disposition": {"escalate"}, "source": {"beta"}, "ptext": {"SECRET"}}} {
			b.post(t, "/replay/dry-run", secret, form)
		}
	}
	code, body := b.get(t, "/dead-letters/"+b.escID+"?text=1", operatorSecret)
	if code != http.StatusOK || !strings.Contains(body, "Redacted.") || !strings.Contains(body, "rule card_number matched") {
		t.Errorf("escalation as operator with text=1: %d; want the redaction naming the rule", code)
	}
	if _, body := b.get(t, "/dead-letters?ptext=SECRET-PAN", operatorSecret); !strings.Contains(body, `id="matched">0<`) {
		t.Error("a payload search matched an escalation: a search must not probe its text")
	}
	b.assertNoSecret(t)
}

func TestResponsesAreNotCachedAndBodiesBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/dead-letters/"+b.alphaID+"?text=1", nil)
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q on a page with chunk text; want no-store", cc)
	}
	big := strings.NewReader("reason=" + strings.Repeat("x", 1<<20))
	req, _ = http.NewRequest(http.MethodPost, b.srv.URL+"/replay", big)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	if code, _ := do(t, req); code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB form: %d; want 413", code)
	}
}
