package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// proc is one measured child process. Its stderr is scanned line by line:
// the last lines are kept for error messages, and a marker line can be
// waited for (a service's "started" log line).
type proc struct {
	role   string
	p      *localenv.Process
	stdout localenv.Buffer
	stderr lineWriter

	mu     sync.Mutex
	tail   []string
	marker string
	seen   chan struct{}
	// metrics is where the service serves /metrics, from its log line;
	// empty until then, or with METRICS_ADDR empty.
	metrics string

	// hwmKiB is the last VmHWM read while the process ran; see sampleHWM.
	hwmKiB atomic.Int64
}

// maxTail is how many stderr lines a proc keeps for error messages.
const maxTail = 40

// procSpec describes a child to start.
type procSpec struct {
	role   string
	path   string
	args   []string
	env    []string
	marker string // a stderr substring that means "ready"; empty for none
}

// startProc starts a child that dies with the benchmark (SIGKILL on the
// parent's death), so that no run leaves a process behind on the machine.
func startProc(s procSpec) (*proc, error) {
	p := &proc{role: s.role, marker: s.marker, seen: make(chan struct{})}
	if s.marker == "" {
		close(p.seen)
	}
	p.stderr.line = p.scanLine
	var err error
	p.p, err = localenv.Start(localenv.Command{
		Name: s.role, Path: s.path, Args: s.args, Env: s.env,
		Stdout: &p.stdout, Stderr: &p.stderr,
	})
	if err != nil {
		return nil, err
	}
	go p.sampleHWM()
	return p, nil
}

func (p *proc) scanLine(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker != "" && strings.Contains(line, p.marker) {
		p.marker = ""
		close(p.seen)
	}
	if p.metrics == "" && strings.Contains(line, metricsLog) {
		var l struct {
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &l) == nil {
			p.metrics = l.Addr
		}
	}
	p.tail = append(p.tail, line)
	if len(p.tail) > maxTail {
		p.tail = p.tail[1:]
	}
}

// metricsLog is the line a service logs once it serves /metrics, the
// address in its addr field (telemetry.Server.Serve).
const metricsLog = "serving metrics and health"

// metricsAddr is where the service serves /metrics; empty if it has not
// said.
func (p *proc) metricsAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.metrics
}

// stdoutSnapshot returns what the process has written to stdout so far.
func (p *proc) stdoutSnapshot() string { return p.stdout.String() }

// logTail returns the last stderr lines.
func (p *proc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// exited reports whether the process has exited.
func (p *proc) exited() bool { return !p.p.Running() }

// ready waits for the marker line; it fails if the process exits first or
// the timeout passes.
func (p *proc) ready(timeout time.Duration) error {
	select {
	case <-p.seen:
		return nil
	case <-p.p.Exited():
		return fmt.Errorf("%s exited before it was ready: %v\n%s", p.role, p.p.Wait(), p.logTail())
	case <-time.After(timeout):
		return fmt.Errorf("%s not ready after %s\n%s", p.role, timeout, p.logTail())
	}
}

// wait waits for the process to exit by itself and reports a non-zero exit
// as an error.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case <-p.p.Exited():
	case <-time.After(timeout):
		_ = p.p.Kill()
		return fmt.Errorf("%s did not exit within %s\n%s", p.role, timeout, p.logTail())
	}
	if err := p.p.Wait(); err != nil {
		return fmt.Errorf("%s: %w\n%s", p.role, err, p.logTail())
	}
	return nil
}

// stop asks the process to shut down gracefully (SIGTERM) and waits; after
// grace it is killed. Only a kill is an error: a service stopped by SIGTERM
// exits 0.
func (p *proc) stop(grace time.Duration) error {
	if p.exited() {
		return p.exitErr()
	}
	p.readHWM()
	if err := p.p.Stop(grace); errors.Is(err, localenv.ErrKilled) {
		return fmt.Errorf("%s ignored SIGTERM for %s and was killed\n%s", p.role, grace, p.logTail())
	} else if err != nil {
		return err
	}
	return p.exitErr()
}

func (p *proc) exitErr() error {
	err := p.p.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s: %w\n%s", p.role, err, p.logTail())
	}
	return err
}

// kill ends the process at once, for cleanup after a failed run.
func (p *proc) kill() { _ = p.p.Kill() }

// usage returns the process's own resource use, from wait4; call it after
// the process has exited.
func (p *proc) usage() ProcUsage {
	u := ProcUsage{Role: p.role}
	st := p.p.State()
	if st == nil {
		return u
	}
	u.CPUSeconds = (st.UserTime() + st.SystemTime()).Seconds()
	u.PeakRSSMiB = float64(p.hwmKiB.Load()) / 1024
	return u
}

// cpu returns the CPU time the live process has used so far.
func (p *proc) cpu() time.Duration {
	st, err := readStat(p.p.Pid())
	if err != nil {
		return 0
	}
	return time.Duration(st.ticks) * time.Second / userHZ
}

// hwmInterval is how often a running child's VmHWM is read.
const hwmInterval = 50 * time.Millisecond

// sampleHWM reads the child's VmHWM until it exits. VmHWM is a high-water
// mark, so the last read is the peak up to within hwmInterval of the exit
// (stop reads it once more just before SIGTERM). wait4's ru_maxrss is no
// substitute: Go starts children with a vfork-style clone, and Linux
// carries the parent's high-water mark across the exec into the child's
// ru_maxrss, so every child would report at least the benchmark's own RSS.
func (p *proc) sampleHWM() {
	t := time.NewTicker(hwmInterval)
	defer t.Stop()
	for {
		p.readHWM()
		select {
		case <-p.p.Exited():
			return
		case <-t.C:
		}
	}
}

func (p *proc) readHWM() {
	if kib, ok := vmHWM(p.p.Pid()); ok && kib > p.hwmKiB.Load() {
		p.hwmKiB.Store(kib)
	}
}

// lineWriter hands each line written to it, without its newline, to
// line. A process's last line lacks a newline only if it crashed mid-write,
// and is dropped.
type lineWriter struct {
	line func(string)
	mu   sync.Mutex
	buf  []byte
}

// maxLine bounds a line: longer ones are cut there, as bufio.Scanner's
// buffer limit once did.
const maxLine = 1 << 20

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > maxLine {
				w.line(string(w.buf[:maxLine]))
				w.buf = w.buf[maxLine:]
			}
			return len(b), nil
		}
		w.line(strings.TrimSuffix(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
}

// ProcUsage is one process's resource use over a run.
type ProcUsage struct {
	// Role names the process: producer, consumer-1, embed-sim, …
	Role string `json:"role"`
	// PeakRSSMiB is the peak resident set size (VmHWM), in MiB.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// CPUSeconds is user plus system CPU time.
	CPUSeconds float64 `json:"cpu_seconds"`
}
