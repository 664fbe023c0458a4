package localenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNotLocal is what the crash and restart helpers (Start, Kill,
// StopImmediate, Restart) return, wrapped, on a server this process does
// not run as a child: one given by URL, or run in a container, which may
// come back on another port.
var ErrNotLocal = errors.New("crash and restart helpers need a server this process runs (PostgreSQL binaries, nats-server), not one given by URL or run in a container")

// server is a child server process that can be stopped and started again
// on the same command, and so on the same port and data; or, attached, a
// server this process does not run, which it can only close.
type server struct {
	cmd    Command
	detach func(ctx context.Context) error // attached servers only; may be nil

	mu   sync.Mutex
	proc *Process
}

// attached is a server named name that this process does not run; close
// calls stop, when given.
func attached(name string, stop func(ctx context.Context) error) *server {
	return &server{cmd: Command{Name: name}, detach: stop}
}

// start starts the server unless it is running.
func (s *server) start() (*Process, error) {
	if s.cmd.Path == "" {
		return nil, fmt.Errorf("start %s: %w", s.cmd.Name, ErrNotLocal)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && s.proc.Running() {
		return nil, fmt.Errorf("%s: already running", s.cmd.Name)
	}
	p, err := Start(s.cmd)
	if err != nil {
		return nil, err
	}
	s.proc = p
	return p, nil
}

// signal stops the server with sig, escalating to SIGKILL after grace;
// only a server that survives SIGKILL is an error.
func (s *server) signal(sig syscall.Signal, grace time.Duration) error {
	if s.cmd.Path == "" {
		return fmt.Errorf("stop %s: %w", s.cmd.Name, ErrNotLocal)
	}
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.Signal(sig, grace); err != nil && !errors.Is(err, ErrKilled) {
		return err
	}
	return nil
}

// kill stops the server with SIGKILL.
func (s *server) kill() error { return s.signal(syscall.SIGKILL, killWait) }

// close stops a server this process runs with sig (see signal), for
// cleanup, or detaches from an attached one.
func (s *server) close(sig syscall.Signal, grace time.Duration) error {
	if s.cmd.Path != "" {
		return s.signal(sig, grace)
	}
	if s.detach != nil {
		return s.detach(context.Background())
	}
	return nil
}

// handedOut holds every port freePort has returned in this process. The
// port's listener is closed before its server binds it, so the kernel may
// offer the same port again in between; two of our own servers must not
// be given it (a service then fails to bind, while a readiness check on
// its address is answered by the other one). Each port is also reserved
// against the other processes that use this package, such as the test
// binaries go test runs side by side: see reserve.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
	held  []*os.File // the reservations, kept open until the process exits
}{ports: make(map[int]bool)}

// freePort asks the kernel for a free loopback TCP port, never one it has
// already returned in this process nor one another process reserved. The
// kernel picks at random among the free ports of its ephemeral range
// (half of it, 14,000 on Linux's default), fewer when a loaded machine
// holds many in TIME_WAIT, so after a few thousand ports handed out most
// offers repeat one: it asks until one does not, within a bound that
// only a range nearly used up reaches.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 10000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] && reserve(port) {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("find a free port: the kernel offered only ports already handed out")
}

// reserve takes an exclusive lock on the port's file in a directory all
// processes share, and keeps it until this process exits, when the
// kernel releases it: another process whose kernel probe is offered the
// same port before our server binds it passes it over. A port is
// reserved without the lock when the directory cannot be written: the
// kernel's offer is then all there is to go by.
func reserve(port int) bool {
	dir := filepath.Join(os.TempDir(), "sluice-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	_ = os.Chmod(dir, 0o777) // shared by every user that runs tests
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDONLY, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	handedOut.held = append(handedOut.held, f)
	return true
}

// FreeAddr asks the kernel for a free loopback address, host:port, for a
// child service to listen on.
func FreeAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}
