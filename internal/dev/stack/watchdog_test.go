package stack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// downWhenGone stops the stack in dir once this test binary has exited,
// however it exited: the stack's processes are detached and would outlive
// a test that panicked or was killed before its cleanup ran.
func downWhenGone(t *testing.T, bin, dir string) {
	t.Helper()
	script := `while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; "$2" down --dir "$3" >/dev/null 2>&1`
	cmd := exec.Command("/bin/sh", "-c", script, "sluice-stack-watchdog", strconv.Itoa(os.Getpid()), filepath.Join(bin, "sluice-dev"), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the stack's watchdog: %v", err)
	}
	_ = cmd.Process.Release()
}
