package cli_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/testenv"
)

func TestConsoleRefusesWeakTokens(t *testing.T) {
	t.Parallel()
	code, _, errOut := sluice(t, map[string]string{"CONSOLE_OPERATOR_TOKEN": "short"}, "console")
	if code != 2 || !strings.Contains(errOut, "at least 16") {
		t.Errorf("short token: exit %d, stderr %q; want 2 and how to make a good one", code, errOut)
	}
	code, _, errOut = sluice(t, nil, "console", "--addr", "nowhere")
	if code != 2 || !strings.Contains(errOut, "host:port") {
		t.Errorf("bad address: exit %d, stderr %q; want 2", code, errOut)
	}
}

// Without configured tokens the console is not open: it generates an
// operator token and prints a sign-in link, and it stops on cancel.
func TestConsoleServesWithAGeneratedToken(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	n := testenv.NewNATS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stdout bytes.Buffer
	stderr := &testenv.Buffer{}
	env := cli.Env{Stdout: &stdout, Stderr: stderr, Lookup: func(k string) (string, bool) {
		v, ok := map[string]string{"DATABASE_URL": db.URL, "NATS_URL": n.URL, "CONSOLE_ADDR": addr}[k]
		return v, ok
	}}
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() { exit <- cli.Run(ctx, env, []string{"console"}) }()
	link := regexp.MustCompile(`open (http://\S+/login\?token=\S+)`)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := link.FindStringSubmatch(stderr.String()); m != nil {
			if resp, err := client.Get(m[1]); err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
					t.Fatalf("sign-in link: %d; want 303 with a session", resp.StatusCode)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no working sign-in link; stderr %q", stderr.String())
		}
		select {
		case code := <-exit:
			t.Fatalf("console exited %d early; stderr %q", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if resp, err := http.Get("http://" + addr + "/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / without a token: %v %v; want 401", resp, err)
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d after cancel; want 0; stderr %q", code, stderr.String())
	}
}
