package chaos_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const dims = 16

// binaries are every command, built once per test binary: crash tests
// need real processes to die.
func binaries(t *testing.T) string { return testenv.Binaries(t) }

// proc is one service process.
type proc struct {
	*localenv.Process
	name string
	log  string
	// metrics is a service's METRICS_ADDR.
	metrics string
}

func (p *proc) running() bool { return p.Running() }

// kill is kill -9.
func (p *proc) kill() { _ = p.Kill() }

// stop is SIGTERM, then kill -9 after 30s.
func (p *proc) stop() { _ = p.Stop(30 * time.Second) }

// wait waits for a one-shot process and returns its exit code.
func (p *proc) wait(timeout time.Duration) (int, error) {
	select {
	case <-p.Exited():
	case <-time.After(timeout):
		return -1, fmt.Errorf("%s still running after %s", p.name, timeout)
	}
	err := p.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

func (p *proc) logTail() string { return p.LogTail(3000) }

// fleetOptions shape a fleet.
type fleetOptions struct {
	// sim are embed-sim's flags beyond address and dims.
	sim []string
	// env is added to every service's environment.
	env []string
	// topology is what the owner declares before any service starts; set
	// its AckWait where env sets the consumers' ACK_WAIT.
	topology broker.Topology
	// dims is generation 1's dimension, EMBEDDING_DIMS. Defaults to dims.
	dims int
}

// fleet is one test's whole deployment: private PostgreSQL and NATS
// servers it may stop, and every service as a process.
type fleet struct {
	t      *testing.T
	bin    string
	dir    string
	pg     *testenv.Postgres
	db     *testenv.Database
	nats   *testenv.NATS
	js     jetstream.JetStream
	simURL string
	opts   fleetOptions
	// natsURLFor is the NATS_URL a service of a role gets: f.nats's own
	// unless the test routes services elsewhere (a cluster, proxies).
	natsURLFor func(natsauth.Role) string
	// dbURLFor is the DATABASE_URL a service of a PostgreSQL role gets:
	// f.db's, unless the test routes services through a proxy.
	dbURLFor func(role string) string

	mu    sync.Mutex
	procs []*proc
	sim   *proc
}

func newFleet(t *testing.T, opts fleetOptions) *fleet {
	t.Helper()
	if opts.dims == 0 {
		opts.dims = dims
	}
	f := &fleet{t: t, bin: binaries(t), dir: t.TempDir(), opts: opts}
	f.pg = testenv.NewPostgres(t)
	f.db = testenv.NewDatabase(t, testenv.OnServer(f.pg), testenv.WithDims(opts.dims))
	f.nats, f.js = testenv.NewJetStream(t, opts.topology)
	f.natsURLFor = f.nats.URLFor
	f.dbURLFor = f.db.RoleURL
	f.simURL = "http://" + freeAddr(t)
	f.startSim(opts.sim...)
	t.Cleanup(f.stopAll)
	return f
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// env is what binary gets: the deployment's settings, metrics on, the
// NATS credentials of its own role, and PostgreSQL as its own role, as
// the shipped compose file starts it.
func (f *fleet) env(binary, metricsAddr string, extra ...string) []string {
	role, err := natsauth.ForBinary(binary)
	if err != nil {
		f.t.Fatal(err)
	}
	pgRole, err := migrations.RoleForBinary(binary)
	if err != nil {
		f.t.Fatal(err)
	}
	env := append([]string{"NATS_URL=" + f.natsURLFor(role)},
		"DATABASE_URL="+f.dbURLFor(pgRole), "EMBEDDER_URL="+f.simURL,
		fmt.Sprintf("EMBEDDING_DIMS=%d", f.opts.dims), "METRICS_ADDR="+metricsAddr, "LOG_FORMAT=json", "LOG_LEVEL=info",
		"HOUSEKEEPING_INTERVAL=1s", "OWED_INTERVAL=1s", "RELAY_POLL_INTERVAL=200ms",
		// A killed producer's run ends interrupted once silent this long.
		"RUN_HEARTBEAT_INTERVAL=1s", "RUN_HEARTBEAT_TIMEOUT=5s",
	)
	env = append(env, f.opts.env...)
	return append(env, extra...)
}

func (f *fleet) spawn(name string, env []string, args ...string) *proc {
	f.t.Helper()
	f.mu.Lock()
	n := len(f.procs)
	f.mu.Unlock()
	log := filepath.Join(f.dir, fmt.Sprintf("%s-%d.log", name, n))
	lp, err := localenv.Start(localenv.Command{Name: name, Path: filepath.Join(f.bin, name), Args: args, Env: env, Log: log})
	if err != nil {
		f.t.Fatal(err)
	}
	p := &proc{Process: lp, name: name, log: log}
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p
}

// service starts a long-running service and waits until it is ready.
func (f *fleet) service(name string, extra ...string) *proc {
	f.t.Helper()
	addr := freeAddr(f.t)
	p := f.spawn(name, f.env(name, addr, extra...))
	p.metrics = addr
	f.waitHTTP(p, "http://"+addr+"/readyz")
	return p
}

func (f *fleet) waitHTTP(p *proc, url string) {
	f.t.Helper()
	if err := p.WaitReady(90*time.Second, localenv.HTTPReady(url)); err != nil {
		f.t.Fatal(err)
	}
}

// startSim (re)starts embed-sim on the fleet's embedder address.
func (f *fleet) startSim(args ...string) {
	f.t.Helper()
	addr := strings.TrimPrefix(f.simURL, "http://")
	f.sim = f.spawn("embed-sim", nil, append([]string{"--addr", addr, "--dims", fmt.Sprint(f.opts.dims), "--log-level", "warn"}, args...)...)
	f.waitHTTP(f.sim, f.simURL+"/healthz")
}

// services starts the usual deployment: two consumers, the outbox relay
// and the DLQ consumers.
func (f *fleet) services(extra ...string) {
	for _, name := range []string{"consumer", "consumer", "outbox-relay", "dlq-replayer"} {
		f.service(name, extra...)
	}
}

// stopServices stops every process but embed-sim.
func (f *fleet) stopServices() {
	f.mu.Lock()
	procs := append([]*proc(nil), f.procs...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		if p != f.sim {
			wg.Go(p.stop)
		}
	}
	wg.Wait()
}

// oneOfEach starts one consumer, the outbox relay and the DLQ consumers.
func (f *fleet) oneOfEach() {
	for _, name := range []string{"consumer", "outbox-relay", "dlq-replayer"} {
		f.service(name)
	}
}

func (f *fleet) stopAll() {
	f.mu.Lock()
	procs := append([]*proc(nil), f.procs...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.stop)
	}
	wg.Wait()
	// Each service runs as its own PostgreSQL role: one denied a
	// privilege its statements need is a failure, whether or not it
	// recovered.
	for _, p := range procs {
		raw, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(raw)) {
			if strings.Contains(line, "SQLSTATE 42501") {
				f.t.Errorf("%s was denied a privilege as its PostgreSQL role: %s", p.name, strings.TrimSpace(line))
				break
			}
		}
	}
	if f.t.Failed() {
		for _, p := range procs {
			f.t.Logf("--- %s log tail:\n%s", p.name, p.logTail())
		}
	}
}

// chunking is the producer's chunking, which the CLI's environment
// shares, as a deployment's .env gives it to both: sluice index create
// checks a generation's chunking against it.
var chunking = []string{"CHUNK_SIZE=200", "CHUNK_UNIT=chars", "CHUNK_OVERLAP=0"}

// produce runs the producer as a one-shot process over dir.
func (f *fleet) produce(source, dir string, extra ...string) *proc {
	f.t.Helper()
	env := f.env("producer", freeAddr(f.t), append(append([]string(nil), chunking...), extra...)...)
	return f.spawn("producer", env, "--source", source, dir)
}

// sluice runs the operator CLI and returns its exit code and output.
func (f *fleet) sluice(args ...string) (int, string) {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(f.bin, "sluice"), args...)
	cmd.Env = append(os.Environ(), f.env("sluice", "", chunking...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String()
	}
	if err != nil {
		f.t.Fatalf("sluice %v: %v", args, err)
	}
	return 0, out.String()
}

func (f *fleet) count(query string, args ...any) int {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := f.db.Pool.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// tryCount is count for polls that may meet a database that is down.
func (f *fleet) tryCount(query string, args ...any) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	err := f.db.Pool.QueryRow(ctx, query, args...).Scan(&n)
	return n, err == nil
}

// ingestMessages is how many messages INGEST holds; -1 when it cannot say.
func (f *fleet) ingestMessages() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := f.js.Stream(ctx, broker.IngestStream)
	if err != nil {
		return -1
	}
	info, err := s.Info(ctx)
	if err != nil {
		return -1
	}
	return int(info.State.Msgs)
}

// eventually polls cond until it holds or the timeout passes.
func (f *fleet) eventually(timeout time.Duration, what string, cond func() bool) {
	f.t.Helper()
	testenv.Eventually(f.t, timeout, what, cond)
}

// writeCorpus writes n small text documents under a new directory.
func (f *fleet) writeCorpus(prefix string, n, words int) string {
	f.t.Helper()
	dir := filepath.Join(f.dir, "corpus-"+prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	for i := range n {
		var b strings.Builder
		for w := range words {
			fmt.Fprintf(&b, "%s%d river gate %d flows w%d ", prefix, i, w%7, w)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%04d.txt", prefix, i)), []byte(b.String()), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	return dir
}
