package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// errTimedOut is the cause of an extraction context whose Timeout passed,
// told apart from the caller's own deadline or cancellation.
var errTimedOut = errors.New("extraction timed out")

// maxStderr bounds how much of a tool's error output is kept.
const maxStderr = 64 << 10

// killGrace is how long a killed tool's output pipes may stay open.
const killGrace = 2 * time.Second

// tool runs a PDF or OCR tool as the extraction's sandbox: in its own
// process group, killed as a group when the context ends, its address
// space capped by prlimit, its output capped. It needs no network and
// writes no files.
type tool struct {
	maxMemory int64
	maxOutput int64
}

// toolPackages names the Debian package that installs each tool.
var toolPackages = map[string]string{
	"pdfinfo":   "poppler-utils",
	"pdftotext": "poppler-utils",
	"pdftoppm":  "poppler-utils",
	"tesseract": "tesseract-ocr",
}

// toolResult is what a tool printed.
type toolResult struct {
	stdout []byte
	stderr string
}

// run runs name with args. A tool that exits non-zero returns its result
// and an *exec.ExitError for the caller to interpret; the limits' own
// failures come back as *Error (extract_timeout, extract_memory), a
// missing tool as ErrToolMissing, and a caller's cancellation as the
// context's error.
func (t tool) run(ctx context.Context, name string, args ...string) (toolResult, error) {
	return t.runInput(ctx, nil, nil, name, args...)
}

// runInput is run with stdin as the tool's standard input and env added
// to its environment.
func (t tool) runInput(ctx context.Context, stdin []byte, env []string, name string, args ...string) (toolResult, error) {
	bin, err := exec.LookPath(name)
	if err != nil {
		return toolResult{}, fmt.Errorf("%w: %s: install %s (make extract-tools), then replay the file from its kept bytes: %v", ErrToolMissing, name, toolPackages[name], err)
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return toolResult{}, fmt.Errorf("%w: prlimit caps the extraction tools' memory: install util-linux: %v", ErrToolMissing, err)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(runCtx, prlimit, append([]string{"--as=" + strconv.FormatInt(t.maxMemory, 10), "--", bin}, args...)...)
	// Its own process group, killed whole on a timeout; and killed with
	// the process that started it, so that a worker killed mid-page
	// leaves no tool running on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = killGrace
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stdout := &cappedBuffer{max: t.maxOutput, overflow: func() { cancel(errOutputFull) }}
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	res := toolResult{stdout: stdout.Bytes(), stderr: stderr.String()}
	switch {
	case errors.Is(context.Cause(runCtx), errOutputFull):
		return res, failf(classify.ClassExtractMemory, "%s printed more than the %d-byte text limit", name, t.maxOutput)
	case errors.Is(context.Cause(ctx), errTimedOut):
		return res, wrapf(classify.ClassExtractTimeout, context.Cause(ctx), "%s stopped", name)
	case ctx.Err() != nil:
		return res, ctx.Err()
	case err != nil && outOfMemory(err, res.stderr):
		return res, wrapf(classify.ClassExtractMemory, err, "%s ran out of its %d-byte address space: %s", name, t.maxMemory, firstLine(res.stderr))
	}
	return res, err
}

// errOutputFull stops a tool whose output passed its cap.
var errOutputFull = errors.New("tool output over the limit")

// outOfMemory reports whether a tool failed for want of memory under its
// address-space cap: an allocation failure, or a loader unable to map a
// library at all.
func outOfMemory(err error, stderr string) bool {
	for _, mark := range []string{"bad_alloc", "Out of memory", "out of memory", "Cannot allocate memory", "failed to map segment"} {
		if strings.Contains(stderr, mark) {
			return true
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal() == syscall.SIGABRT || ws.Signal() == syscall.SIGSEGV
		}
	}
	return false
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// cappedBuffer keeps at most max bytes, then calls overflow once and
// drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	max      int64
	overflow func()
	full     bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - int64(b.Len()); int64(len(p)) > room {
		b.Buffer.Write(p[:max(room, 0)])
		if !b.full && b.overflow != nil {
			b.overflow()
		}
		b.full = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
