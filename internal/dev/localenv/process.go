package localenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ErrKilled is what Stop and Signal return, wrapped, when the process
// outlived its grace period and was killed with SIGKILL.
var ErrKilled = errors.New("killed after its grace period")

// killWait bounds the wait for a process to exit after SIGKILL.
const killWait = 10 * time.Second

// Command describes a child process for Start.
type Command struct {
	// Name names the process in errors. Defaults to Path.
	Name string
	// Path is the executable; Args its arguments.
	Path string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// Log is a file that receives stdout and stderr, appended to. With
	// neither Log nor Stdout and Stderr set, output is discarded.
	Log string
	// Stdout and Stderr, when set, receive the output instead of Log.
	Stdout, Stderr io.Writer
	// Group starts the process in its own process group, and signals go
	// to the whole group: a server's own children (PostgreSQL's backends)
	// receive them too.
	Group bool
	// Cred runs the process as another user. Defaults to this process's.
	Cred *syscall.Credential
	// Chroot runs the process inside this root directory, with / as its
	// working directory.
	Chroot string
	// Detached lets the process outlive this one: it runs in a session of
	// its own and is not killed when its starter dies. Servers that a
	// command starts and leaves running (`sluice-dev up`) are detached.
	Detached bool
}

// Process is a running child process. It receives SIGKILL if the process
// that started it dies, so that no child outlives a crashed parent.
type Process struct {
	name   string
	log    string
	group  bool
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts c. Output goes to a file or a writer, never to the parent's
// stdout, so that `go test` does not wait on a pipe a server still holds.
func Start(c Command) (*Process, error) {
	if c.Name == "" {
		c.Name = c.Path
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    c.Group,
		Credential: c.Cred,
		Chroot:     c.Chroot,
	}
	if c.Detached {
		// A new session is a new process group too: signals to the group
		// reach the server's own children.
		cmd.SysProcAttr.Pdeathsig, cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Setsid = 0, false, true
		c.Group = true
	}
	if c.Chroot != "" {
		cmd.Dir = "/"
	}
	var logFile *os.File
	if c.Log != "" {
		f, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: open log: %w", c.Name, err)
		}
		logFile = f
		cmd.Stdout, cmd.Stderr = f, f
	}
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("%s: start %s: %w", c.Name, c.Path, err)
	}
	p := &Process{name: c.Name, log: c.Log, group: c.Group, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(p.exited)
	}()
	return p, nil
}

// Name is the process's name, as errors give it.
func (p *Process) Name() string { return p.name }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file that receives the process's output; empty when
// output goes elsewhere.
func (p *Process) LogPath() string { return p.log }

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not yet exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Wait waits for the process to exit and returns what exec.Cmd.Wait
// returned: nil for exit status 0, an *exec.ExitError otherwise.
func (p *Process) Wait() error {
	<-p.exited
	return p.err
}

// State is the exited process's state, with its resource use; nil while
// it runs.
func (p *Process) State() *os.ProcessState {
	if p.Running() {
		return nil
	}
	return p.cmd.ProcessState
}

// Signal sends sig (to the group, for a Group process) and waits up to
// grace for the process to exit; after that it sends SIGKILL and returns
// an error wrapping ErrKilled. A process that has already exited is left
// alone.
func (p *Process) Signal(sig syscall.Signal, grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	p.send(sig)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	if err := p.Kill(); err != nil {
		return err
	}
	return fmt.Errorf("%s ignored %s for %s: %w", p.name, sig, grace, ErrKilled)
}

// Stop asks the process to shut down (SIGTERM) and kills it after grace;
// see Signal.
func (p *Process) Stop(grace time.Duration) error { return p.Signal(syscall.SIGTERM, grace) }

// Kill sends SIGKILL and waits for the exit.
func (p *Process) Kill() error {
	if !p.Running() {
		return nil
	}
	p.send(syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("%s: pid %d did not exit after SIGKILL", p.name, p.Pid())
	}
}

func (p *Process) send(sig syscall.Signal) {
	if p.group {
		_ = syscall.Kill(-p.Pid(), sig)
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

// LogTail returns the last max bytes of the process's log file, for error
// messages.
func (p *Process) LogTail(max int) string {
	if p.log == "" {
		return ""
	}
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// logTailBytes is how much of a log WaitReady's errors quote.
const logTailBytes = 4096

// WaitReady polls ready until it succeeds, the process exits, or timeout
// passes; the error of the last two quotes the end of the log.
func (p *Process) WaitReady(timeout time.Duration, ready func() error) error {
	var err error
	if Poll(timeout, func() bool { err = ready(); return err == nil || !p.Running() }) && err == nil {
		return nil
	}
	if !p.Running() {
		return fmt.Errorf("%s exited during startup: %w\n%s", p.name, err, p.LogTail(logTailBytes))
	}
	return fmt.Errorf("%s not ready after %s: %w\n%s", p.name, timeout, err, p.LogTail(logTailBytes))
}
