package natsauth_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

var update = flag.Bool("update", false, "rewrite the shipped nats.conf from the generator")

// The shipped server configuration is the generator's output, so the
// permissions the tests prove are the ones deployed.
func TestShippedConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "..", natsauth.ShippedPath)
	want := natsauth.Shipped()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from natsauth.Shipped(): run go test ./internal/platform/natsauth -run TestShippedConfig -update", natsauth.ShippedPath)
	}
}

func TestURLWithUser(t *testing.T) {
	t.Parallel()
	got := natsauth.URLWithUser("nats://a:4222, nats://old:pw@b:4222", "producer", "p@ss/word")
	want := "nats://producer:p%40ss%2Fword@a:4222,nats://producer:p%40ss%2Fword@b:4222"
	if got != want {
		t.Fatalf("URLWithUser = %q, want %q", got, want)
	}
}

// A nats-server given the shipped file and the passwords in its
// environment, as compose runs it, lets each role in with its password and
// no one without. The server parses a variable's value as it would a
// value in the file, so a password must not read as a number: the
// documented form is a letter followed by letters, digits, - and _.
func TestShippedConfigServes(t *testing.T) {
	t.Parallel()
	bin, err := testenv.NATSServerBinary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	monitor := ml.Addr().(*net.TCPAddr).Port
	ml.Close()
	// -m moves the monitoring port off the shipped one, as a test must;
	// the host stays the file's.
	cmd := exec.Command(bin, "-c", filepath.Join("..", "..", "..", natsauth.ShippedPath), "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-m", strconv.Itoa(monitor))
	cmd.Env = os.Environ()
	for _, r := range natsauth.Roles() {
		cmd.Env = append(cmd.Env, r.PasswordVar()+"=p1234"+strings.ReplaceAll(string(r), "-", "_"))
	}
	cmd.Env = append(cmd.Env, natsauth.Operator.PasswordVar()+"=p0e5a9f3c-17_b")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := fmt.Sprintf("nats://127.0.0.1:%d", port)
	connect := func(role natsauth.Role, password string) error {
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var nc *nats.Conn
			if nc, err = nats.Connect(natsauth.URLWithUser(base, string(role), password), nats.NoReconnect()); err == nil {
				nc.Close()
				return nil
			}
			if errors.Is(err, nats.ErrAuthorization) {
				return err
			}
		}
		return fmt.Errorf("%w\n%s", err, out.String())
	}
	if err := connect(natsauth.Producer, "p1234producer"); err != nil {
		t.Fatalf("producer with its password: %v", err)
	}
	if err := connect(natsauth.Operator, "p0e5a9f3c-17_b"); err != nil {
		t.Fatalf("operator with a hex-like password: %v", err)
	}
	if err := connect(natsauth.Producer, "p1234consumer"); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("producer with the consumer's password: %v, want an authorization error", err)
	}
	// Monitoring listens on loopback alone, whatever the client address.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", monitor))
	if err != nil {
		t.Fatalf("monitoring on loopback: %v", err)
	}
	defer resp.Body.Close()
	var varz struct {
		HTTPHost string `json:"http_host"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&varz); err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(natsauth.ShippedMonitor); varz.HTTPHost != host {
		t.Errorf("monitoring listens on %q; want %q, the server's own loopback", varz.HTTPHost, host)
	}
}
