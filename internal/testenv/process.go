package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// process is a child server process that dies with its parent.
type process struct {
	name    string
	path    string
	args    []string
	env     []string
	logPath string
	cred    *syscall.Credential
	chroot  string // run inside this root directory, when set

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start launches the process. Its output goes to logPath, never to the
// parent's stdout, so `go test` does not wait on a pipe a server still holds.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true,
		Credential: p.cred,
		Chroot:     p.chroot,
	}
	if p.chroot != "" {
		cmd.Dir = "/"
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("%s: start %s: %w", p.name, p.path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// exited reports whether the process has exited since it was started.
func (p *process) exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group and waits up to timeout for the
// process to exit; on timeout it escalates to SIGKILL.
func (p *process) signal(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s: pid %d did not exit after SIGKILL", p.name, cmd.Process.Pid)
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() error { return p.signal(syscall.SIGKILL, 10*time.Second) }

// logTail returns the last few KiB of the process log, for error messages.
func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	const max = 4096
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// waitFor polls ready until it succeeds, the process exits, or timeout passes.
func (p *process) waitFor(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = ready(); err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited during startup: %w\n%s", p.name, err, p.logTail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w\n%s", p.name, timeout, err, p.logTail())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// startWatchdog starts a detached shell that removes dir once the current
// process has exited, however it exited. It is what keeps a panicking test
// binary from leaving temporary directories behind.
func startWatchdog(dir string) error {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; rm -rf "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, "sluice-testenv-watchdog", strconv.Itoa(os.Getpid()), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start cleanup watchdog: %w", err)
	}
	return cmd.Process.Release()
}

var errNotLocal = errors.New("not a local server")
