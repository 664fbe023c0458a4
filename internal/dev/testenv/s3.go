package testenv

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// VersityGWEnv names the Versity S3 gateway binary the S3 tests run; the
// Makefile's s3-gateway target builds it into bin/versitygw and exports
// it.
const VersityGWEnv = "VERSITYGW_BIN"

// S3 root credentials of every gateway NewS3Gateway starts.
const (
	S3AccessKey = "sluice-test-access"
	S3SecretKey = "sluice-test-secret-key"
	S3Region    = "us-east-1"
)

// S3Gateway is a real S3-compatible store for tests: the Versity gateway
// with its posix backend, on a free loopback port.
type S3Gateway struct {
	// Endpoint is the gateway's URL, for path-style requests.
	Endpoint string
	// Root is the posix backend's directory: each directory under it is a
	// bucket.
	Root string
	// AccessLog is the file the gateway names every S3 operation in, one
	// request a line.
	AccessLog string
	proc      *localenv.Process
	cmd       localenv.Command
}

// S3Option adjusts a gateway.
type S3Option func(*s3Options)

type s3Options struct{ natsURL, topic string }

// WithS3Events makes the gateway publish its bucket event notifications,
// AWS-style JSON records, to the NATS at url on subject topic: plain NATS
// publishes, not JetStream.
func WithS3Events(url, topic string) S3Option {
	return func(o *s3Options) { o.natsURL, o.topic = url, topic }
}

// NewS3Gateway starts a Versity S3 gateway private to the test, from
// VERSITYGW_BIN, and stops it when the test ends. A test run without the
// binary fails saying how to build it.
func NewS3Gateway(t testing.TB, opts ...S3Option) *S3Gateway {
	t.Helper()
	var o s3Options
	for _, opt := range opts {
		opt(&o)
	}
	bin := os.Getenv(VersityGWEnv)
	if bin == "" {
		t.Fatalf("testenv: %s is not set: run the tests with make test, or make s3-gateway and %s=$PWD/bin/versitygw", VersityGWEnv, VersityGWEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("testenv: %s=%s: %v: build it with make s3-gateway", VersityGWEnv, bin, err)
	}
	dir := t.TempDir()
	g := &S3Gateway{Root: filepath.Join(dir, "root"), AccessLog: filepath.Join(dir, "access.log")}
	if err := os.Mkdir(g.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := localenv.FreePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	g.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	args := []string{"--port", fmt.Sprintf("127.0.0.1:%d", port), "--access", S3AccessKey, "--secret", S3SecretKey,
		"--region", S3Region, "--access-log", g.AccessLog, "--quiet"}
	if o.natsURL != "" {
		args = append(args, "--event-nats-url", o.natsURL, "--event-nats-topic", o.topic)
	}
	args = append(args, "posix", g.Root)
	g.cmd = localenv.Command{Name: "versitygw", Path: bin, Args: args, Log: filepath.Join(dir, "versitygw.log")}
	if err := g.start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = g.proc.Kill() })
	return g
}

// start starts the gateway and waits until it answers.
func (g *S3Gateway) start() error {
	var err error
	if g.proc, err = localenv.Start(g.cmd); err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	return g.proc.WaitReady(30*time.Second, func() error {
		resp, err := client.Get(g.Endpoint)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
}

// Restart kills the gateway with SIGKILL, requests in flight included,
// and starts it again on the same port and backend.
func (g *S3Gateway) Restart() error {
	if err := g.proc.Kill(); err != nil {
		return err
	}
	return g.start()
}

// Bucket creates bucket name in the posix backend: a directory under
// Root.
func (g *S3Gateway) Bucket(t testing.TB, name string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(g.Root, name), 0o755); err != nil {
		t.Fatalf("testenv: create bucket %s: %v", name, err)
	}
}

// Requests counts the requests of the access log whose line names
// operation op, as the gateway names it: "s3_GetObject",
// "s3_ListObjectsV2", ...
func (g *S3Gateway) Requests(t testing.TB, op string) int {
	t.Helper()
	f, err := os.Open(g.AccessLog)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatalf("testenv: read the gateway's access log: %v", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " "+op+" ") {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("testenv: read the gateway's access log: %v", err)
	}
	return n
}
