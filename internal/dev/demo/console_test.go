package demo

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// The link the demo prints signs in to a working console, once.
func TestDemoConsoleLinkSignsIn(t *testing.T) {
	db := testenv.NewDatabase(t)
	n, _ := testenv.NewJetStream(t, broker.Topology{})
	var out bytes.Buffer
	stop, err := serveConsole(context.Background(), db.Pool, n.ConnConfig(natsauth.Console, t.Name()), &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`triage console: (http://127\.0\.0\.1:\d+/login\?code=\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no console link in %q", out.String())
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in link: %d, cookies %v, location %q; want 303 to / with a session", resp.StatusCode, cookies, resp.Header.Get("Location"))
	}
	u, _ := url.Parse(m[1])
	req, _ := http.NewRequest(http.MethodGet, "http://"+u.Host+"/", nil)
	req.AddCookie(cookies[0])
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("overview with the session: %d; want 200", resp.StatusCode)
	}
	resp, err = client.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("the same link again: %d, cookies %v; want 401 and no session", resp.StatusCode, resp.Cookies())
	}
}
