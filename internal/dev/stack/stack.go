package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

const (
	// readyTimeout bounds each process's wait to answer its readiness
	// check.
	readyTimeout = 60 * time.Second
	// stopGrace is how long a process has to stop before it is killed.
	stopGrace = 20 * time.Second
)

// Up starts the stack in c.Dir, creating it on first use, and prints the
// environment to export. A stack already running is left as it is and its
// environment printed again.
func Up(ctx context.Context, c Config) error {
	if c.Dir != "" {
		abs, err := filepath.Abs(c.Dir)
		if err != nil {
			return err
		}
		c.Dir = abs
	}
	st, existed, err := loadState(c.Dir)
	if err != nil {
		return err
	}
	var prev *Embedder
	if existed {
		prev = &st.Embedder
	}
	c.applyDefaults(prev)
	if err := c.Validate(prev); err != nil {
		return err
	}
	if existed && len(st.running()) > 0 {
		fmt.Fprintf(c.Stderr, "the stack in %s is running already\n", c.Dir)
		return st.report(c)
	}
	if !existed {
		if st, err = newState(c.Embedder); err != nil {
			return err
		}
	}
	st.Embedder, st.PIDs = c.Embedder, nil
	for _, d := range []string{c.Dir, filepath.Join(c.Dir, "postgres"), filepath.Join(c.Dir, "nats"), filepath.Join(c.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		// PostgreSQL runs as another user when we are root.
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	u := &upper{c: c, st: st}
	if err := u.up(ctx); err != nil {
		_ = u.st.save(c.Dir)
		return errors.Join(err, Down(context.Background(), c.Dir, c.Stderr))
	}
	if err := st.save(c.Dir); err != nil {
		return err
	}
	if err := st.writeEnvFiles(c.Dir, c.APIKey); err != nil {
		return err
	}
	return st.report(c)
}

// upper starts one stack.
type upper struct {
	c  Config
	st *state
}

func (u *upper) up(ctx context.Context) error {
	fmt.Fprintf(u.c.Stderr, "starting PostgreSQL and NATS JetStream in %s …\n", u.c.Dir)
	if err := u.postgres(ctx); err != nil {
		return err
	}
	if err := u.nats(ctx); err != nil {
		return err
	}
	if u.st.Embedder.simulated() {
		if err := u.sim(); err != nil {
			return err
		}
	}
	fmt.Fprintf(u.c.Stderr, "starting %s …\n", strings.Join(services, ", "))
	for _, svc := range services {
		p, err := u.start(svc, u.st.env(clientNamed(svc), u.c.APIKey))
		if err != nil {
			return err
		}
		if err := p.WaitReady(readyTimeout, localenv.HTTPReady(fmt.Sprintf("http://127.0.0.1:%d/readyz", u.st.MetricsPorts[svc]))); err != nil {
			return err
		}
	}
	return nil
}

// start starts binary from BinDir, detached, its output in logs/.
func (u *upper) start(binary string, env []string, args ...string) (*localenv.Process, error) {
	return u.run(localenv.Command{Name: binary, Path: filepath.Join(u.c.BinDir, binary), Args: args, Env: env})
}

// run starts cmd detached, its output in logs/NAME.log unless it names a
// log, and records it.
func (u *upper) run(cmd localenv.Command) (*localenv.Process, error) {
	cmd.Detached = true
	if cmd.Log == "" {
		cmd.Log = filepath.Join(u.c.Dir, "logs", cmd.Name+".log")
	}
	p, err := localenv.Start(cmd)
	if err != nil {
		return nil, err
	}
	u.st.PIDs = append(u.st.PIDs, proc{Name: cmd.Name, PID: p.Pid()})
	return p, nil
}

// postgres starts PostgreSQL on the stack's data, creating it on first
// use, and migrates its database with each service's role allowed to log
// in.
func (u *upper) postgres(ctx context.Context) error {
	dir := filepath.Join(u.c.Dir, "postgres")
	if err := localenv.InitPostgres(ctx, dir); err != nil {
		return err
	}
	cmd, err := localenv.PostgresCommand(dir, u.st.PostgresPort)
	if err != nil {
		return err
	}
	p, err := u.run(cmd)
	if err != nil {
		return err
	}
	admin := localenv.PostgresURL(u.st.PostgresPort, "postgres")
	if err := p.WaitReady(readyTimeout, func() error { return localenv.PingPostgres(ctx, admin) }); err != nil {
		return err
	}
	if err := createDatabase(ctx, admin); err != nil {
		return err
	}
	if err := migrations.Up(ctx, u.st.ownerURL(), migrations.Options{Dims: u.st.Embedder.Dims}); err != nil {
		return err
	}
	return localenv.AllowRoleLogins(ctx, admin)
}

// createDatabase creates the stack's database unless it exists.
func createDatabase(ctx context.Context, adminURL string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, database).Scan(&exists); err != nil || exists {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+database)
	return err
}

// nats starts nats-server on the stack's store with a user per role and
// declares the topology as its owner, as `sluice nats setup` does.
func (u *upper) nats(ctx context.Context) error {
	bin, err := localenv.NATSServerBinary(ctx)
	if err != nil {
		return err
	}
	dir := filepath.Join(u.c.Dir, "nats")
	conf := filepath.Join(dir, "nats.conf")
	users := natsauth.UsersWith(func(r natsauth.Role) string { return u.st.Passwords[r] })
	if err := os.WriteFile(conf, []byte(natsauth.ServerConfig{Users: users}.Render()), 0o600); err != nil {
		return err
	}
	p, err := u.run(localenv.Command{Name: "nats-server", Path: bin, Args: []string{
		"-c", conf, "-a", "127.0.0.1", "-p", fmt.Sprint(u.st.NATSPort), "-js", "-sd", filepath.Join(dir, "jetstream"), "-m", "0",
	}})
	if err != nil {
		return err
	}
	if err := p.WaitReady(readyTimeout, func() error { return jetStreamReady(u.st.natsURL(natsauth.Owner)) }); err != nil {
		return err
	}
	nc, js, err := broker.Connect(broker.ConnConfig{URL: u.st.natsURL(natsauth.Owner), Name: "sluice-dev-up"}, zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	return broker.Ensure(ctx, js, broker.Topology{Replicas: 1})
}

// stopAll stops procs at once and waits for each: SIGTERM, or SIGINT for
// PostgreSQL (a fast shutdown: sessions end, data is kept).
func stopAll(log io.Writer, procs []proc) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		sig := syscall.SIGTERM
		if p.Name == "postgres" {
			sig = syscall.SIGINT
		}
		if localenv.Alive(p.PID) {
			fmt.Fprintf(log, "stopping %s (pid %d)\n", p.Name, p.PID)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := localenv.StopPID(p.PID, sig, stopGrace); err != nil {
				errs[i] = fmt.Errorf("stop %s: %w", p.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// jetStreamReady succeeds once JetStream has recovered its store.
func jetStreamReady(url string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = nc.Request("$JS.API.INFO", nil, time.Second)
	return err
}

// sim starts embed-sim, without faults, as the stack's embedder.
func (u *upper) sim() error {
	p, err := u.start("embed-sim", nil, "--addr", fmt.Sprintf("127.0.0.1:%d", u.st.SimPort), "--dims", fmt.Sprint(u.st.Embedder.Dims))
	if err != nil {
		return err
	}
	return p.WaitReady(readyTimeout, localenv.HTTPReady(u.st.embedderURL()+"/healthz"))
}

// Down stops the stack in dir, services first, PostgreSQL last; its data
// stays for the next Up.
func Down(ctx context.Context, dir string, log io.Writer) error {
	st, ok, err := loadState(dir)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no stack in %s (start one with `sluice-dev up --dir %s`)", dir, dir)
	}
	// The services and the simulator stop together, then NATS, then
	// PostgreSQL: each server outlives its clients' goodbyes.
	var services, servers []proc
	for _, p := range st.PIDs {
		if p.Name == "postgres" || p.Name == "nats-server" {
			servers = append(servers, p)
		} else {
			services = append(services, p)
		}
	}
	slices.Reverse(servers)
	var errs []error
	errs = append(errs, stopAll(log, services))
	for _, p := range servers {
		errs = append(errs, stopAll(log, []proc{p}))
	}
	st.PIDs = nil
	errs = append(errs, st.save(dir))
	return errors.Join(errs...)
}
