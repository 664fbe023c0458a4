package cli_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/cli"
	"github.com/sluicehq/sluice/internal/ops/console"
	"github.com/sluicehq/sluice/internal/provider/embedder"
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
	open := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(open, []byte("an-operator-token-others-can-read\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = sluice(t, map[string]string{"CONSOLE_GENERATED_TOKEN_FILE": open}, "console")
	if code != 2 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("a token file others can read: exit %d, stderr %q; want 2 and how to fix it", code, errOut)
	}
	code, _, errOut = sluice(t, map[string]string{"CONSOLE_TLS_CERT": "cert.pem"}, "console")
	if code != 2 || !strings.Contains(errOut, "CONSOLE_TLS_KEY") {
		t.Errorf("a certificate without its key: exit %d, stderr %q; want 2", code, errOut)
	}
}

// Without configured tokens the console is not open: it generates an
// operator token once, keeps it in a file only its owner reads, and never
// prints it; a restart keeps the same token; it stops on cancel.
func TestConsoleServesWithAGeneratedToken(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	n := testenv.NewNATS(t)
	tokenFile := filepath.Join(t.TempDir(), "sluice", "console-operator-token")
	var secret string
	for run, hint := range []string{"generated an operator token and kept it in " + tokenFile, "the operator token is the one kept in " + tokenFile} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		stdout, stderr := &testenv.Buffer{}, &testenv.Buffer{}
		env := cli.Env{Stdout: stdout, Stderr: stderr, Lookup: func(k string) (string, bool) {
			v, ok := map[string]string{"DATABASE_URL": db.URL, "NATS_URL": n.URL, "CONSOLE_ADDR": addr, "CONSOLE_GENERATED_TOKEN_FILE": tokenFile}[k]
			return v, ok
		}}
		ctx, cancel := context.WithCancel(context.Background())
		exit := make(chan int, 1)
		go func() { exit <- cli.Run(ctx, env, []string{"console"}) }()
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if strings.Contains(stdout.String(), hint) {
				raw, err := os.ReadFile(tokenFile)
				if err != nil {
					t.Fatal(err)
				}
				got := strings.TrimSpace(string(raw))
				if run == 1 && got != secret {
					t.Fatal("the restart generated another token")
				}
				secret = got
				if resp, err := client.PostForm("http://"+addr+"/login", url.Values{"token": {secret}}); err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
						t.Fatalf("sign-in with the kept token: %d; want 303 with a session", resp.StatusCode)
					}
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: no working sign-in; stdout %q, stderr %q", run+1, stdout.String(), stderr.String())
			}
			select {
			case code := <-exit:
				t.Fatalf("console exited %d early; stderr %q", code, stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		if info, err := os.Stat(tokenFile); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("token file: %v %v; want mode 0600", info.Mode(), err)
		}
		if resp, err := http.Get("http://" + addr + "/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / without a token: %v %v; want 401", resp, err)
		}
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("exit %d after cancel; want 0; stderr %q", code, stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), secret) {
			t.Errorf("run %d printed the generated token:\nstdout %q\nstderr %q", run+1, stdout.String(), stderr.String())
		}
	}
}

// The console's default address is not the embedder's: started with
// both defaults, the console and the embedding simulator would contend
// for one port and the services would embed through the console.
func TestConsoleDefaultPortIsNotTheEmbedders(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(embedder.DefaultURL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(console.DefaultAddr)
	if err != nil {
		t.Fatal(err)
	}
	if port == u.Port() {
		t.Errorf("console.DefaultAddr %s and embedder.DefaultURL %s share port %s", console.DefaultAddr, embedder.DefaultURL, port)
	}
	if console.DefaultAddr != "127.0.0.1:8090" {
		t.Errorf("console.DefaultAddr = %s, want 127.0.0.1:8090, the port docker-compose.yml and docs/console.md name", console.DefaultAddr)
	}
}
