// Command gotest runs go test -json with the arguments it is given after
// its own flags, prints what a person reads from it (package results and
// the whole output of whatever failed; see package testlog), keeps the
// event stream in the file -log names, and ends with where the time went.
// It exits with go test's status. make test runs the suite through it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"

	"github.com/sluicehq/sluice/internal/dev/testlog"
)

func main() {
	logPath := flag.String("log", "", "file to keep go test's event stream in (none when empty)")
	slowest := flag.Int("slowest", 12, "how many of the slowest packages and tests to list")
	flag.Parse()
	code, err := run(*logPath, *slowest, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(logPath string, slowest int, args []string) (int, error) {
	raw := io.Discard
	if logPath != "" {
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return 1, err
		}
		f, err := os.Create(logPath)
		if err != nil {
			return 1, err
		}
		defer f.Close()
		raw = f
	}
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		return 1, err
	}
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	sum, followErr := testlog.Follow(events, os.Stdout, raw)
	waitErr := cmd.Wait()
	if sum != nil {
		trim := ""
		if bi, ok := debug.ReadBuildInfo(); ok {
			trim = bi.Main.Path + "/"
		}
		sum.Write(os.Stdout, slowest, trim)
	}
	if exit := (*exec.ExitError)(nil); errors.As(waitErr, &exit) {
		return exit.ExitCode(), followErr
	}
	return 0, errors.Join(followErr, waitErr)
}
