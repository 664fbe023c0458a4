package localenv_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

func start(t *testing.T, script string) *localenv.Process {
	t.Helper()
	p, err := localenv.Start(localenv.Command{
		Name: "sh", Path: "/bin/sh", Args: []string{"-c", script},
		Log: filepath.Join(t.TempDir(), "sh.log"), Group: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

// waitReadyLine waits for the script's "ready" line: its traps are set.
func waitReadyLine(t *testing.T, p *localenv.Process) {
	t.Helper()
	if err := p.WaitReady(10*time.Second, func() error {
		if !strings.Contains(p.LogTail(100), "ready") {
			return errors.New("no ready line yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestProcessLogsAndExitStatus(t *testing.T) {
	t.Parallel()
	p := start(t, "echo out; echo err >&2; exit 3")
	var exit *exec.ExitError
	if err := p.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	if p.Running() || p.State() == nil {
		t.Fatal("an exited process reports itself running")
	}
	if tail := p.LogTail(100); tail != "out\nerr\n" {
		t.Fatalf("log = %q, want stdout and stderr", tail)
	}
}

func TestProcessStopEscalatesToKill(t *testing.T) {
	t.Parallel()
	// The shell ignores SIGTERM, so only the SIGKILL after the grace ends it.
	p := start(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	waitReadyLine(t, p)
	if err := p.Stop(200 * time.Millisecond); !errors.Is(err, localenv.ErrKilled) {
		t.Fatalf("Stop = %v, want ErrKilled", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Stop returned")
	}
	if st := p.State().Sys().(syscall.WaitStatus); st.Signal() != syscall.SIGKILL {
		t.Fatalf("ended by %v, want SIGKILL", st.Signal())
	}
}

func TestProcessStopIsGraceful(t *testing.T) {
	t.Parallel()
	p := start(t, `trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
	waitReadyLine(t, p)
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop = %v, want a graceful exit", err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

func TestProcessWaitReadyReportsAnEarlyExit(t *testing.T) {
	t.Parallel()
	p := start(t, "echo boom; exit 1")
	err := p.WaitReady(10*time.Second, func() error { return errors.New("not listening") })
	if err == nil || !strings.Contains(err.Error(), "exited during startup") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("WaitReady = %v, want an early exit quoting the log", err)
	}
}
