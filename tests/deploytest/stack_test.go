package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/demo"
)

// stack is docker-compose.yml, with any override files, running under a
// project name of its own, so that a user's `sluice` project on the same
// engine is never touched.
type stack struct {
	t       *testing.T
	project string
	files   []string // compose's -f arguments, docker-compose.yml first
	env     []string
	events  *eventLog
}

// newStack checks that docker and its compose plugin answer, removes what
// an interrupted earlier run left, starts recording the project's
// container events, and takes the stack down (with its volumes) when the
// test ends.
func newStack(t *testing.T, project string, overrides ...string) *stack {
	t.Helper()
	s := &stack{t: t, project: project, env: os.Environ()}
	for _, f := range append([]string{"docker-compose.yml"}, overrides...) {
		s.files = append(s.files, "-f", filepath.Join(repoRoot, f))
		s.strongPasswords(filepath.Join(repoRoot, f))
	}
	for _, args := range [][]string{{"version"}, {"compose", "version"}} {
		if out, err := exec.CommandContext(t.Context(), "docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v\n%s\nmake test-deploy installs and starts Docker and the compose plugin", strings.Join(args, " "), err, out)
		}
	}
	s.mustCompose(5*time.Minute, "down", "-v", "--remove-orphans")
	s.events = watchEvents(t, project)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.compose(time.Minute, "logs", "--no-color", "--tail", "40")
			t.Logf("last logs:\n%s", out)
		}
		if out, err := s.compose(5*time.Minute, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("down -v: %v\n%s", err, out)
		}
	})
	return s
}

// strongPasswords gives every password variable the compose file names a
// fresh random value, as a deployment's .env does: the services refuse
// the shipped defaults.
func (s *stack) strongPasswords(file string) {
	text, err := os.ReadFile(file)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, v := range passwordVars(string(text)) {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		s.setenv(v, "pw"+hex.EncodeToString(b))
	}
}

// setenv sets a variable that docker-compose.yml interpolates.
func (s *stack) setenv(name, value string) {
	s.env = append(slices.DeleteFunc(s.env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }), name+"="+value)
}

func (s *stack) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(append(append([]string{"compose"}, s.files...), "-p", s.project), args...)
	cmd := exec.CommandContext(ctx, "docker", full...)
	cmd.Env = s.env
	return cmd
}

// compose runs docker compose and returns its stdout; stderr, where
// compose reports progress, is added to the error.
func (s *stack) compose(timeout time.Duration, args ...string) (string, error) {
	// Not canceled with the test: cleanup runs after t.Context is done
	// and must still take the stack down.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.t.Context()), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := s.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker compose %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (s *stack) mustCompose(timeout time.Duration, args ...string) string {
	s.t.Helper()
	out, err := s.compose(timeout, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// psEntry is one container of `docker compose ps --format json`.
type psEntry struct {
	ID, Name, Service, State, Health string
	ExitCode                         int
	Publishers                       []struct {
		URL           string
		TargetPort    int
		PublishedPort int
	}
}

// ps lists the project's containers, stopped ones included.
func (s *stack) ps() []psEntry {
	s.t.Helper()
	out := s.mustCompose(time.Minute, "ps", "-a", "--format", "json")
	var all []psEntry
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var e psEntry
		if err := dec.Decode(&e); err != nil {
			s.t.Fatalf("docker compose ps: %v\n%s", err, out)
		}
		all = append(all, e)
	}
	return all
}

// running returns the running containers of service.
func (s *stack) running(service string) []psEntry {
	return slices.DeleteFunc(s.ps(), func(e psEntry) bool { return e.Service != service || e.State != "running" })
}

// reconcileReport is the part of `sluice reconcile --json` the test reads.
type reconcileReport struct {
	Chunks map[string]int `json:"chunks_by_status"`
	OK     bool           `json:"ok"`
}

// converge polls `docker compose run --rm sluice reconcile` until every
// chunk is stored or parked and reconcile exits 0 (no leak, no duplicate,
// nothing stale), and returns the final report.
func (s *stack) converge(within time.Duration) reconcileReport {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		out, err := s.compose(2*time.Minute, "run", "--rm", "--no-deps", "-T", "sluice", "reconcile", "--json")
		var rep reconcileReport
		jerr := json.Unmarshal([]byte(out), &rep)
		if err == nil && jerr == nil && rep.OK && rep.Chunks["pending"] == 0 {
			return rep
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("not converged after %s: %+v (reconcile: %v; report: %v)\n%s", within, rep, err, jerr, out)
		}
		select {
		case <-s.t.Context().Done():
			s.t.Fatal(s.t.Context().Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// event is one container event of `docker events --format '{{json .}}'`.
type event struct {
	Action   string
	TimeNano int64 `json:"timeNano"`
	Actor    struct {
		ID         string
		Attributes map[string]string
	}
}

func (e event) service() string { return e.Actor.Attributes["com.docker.compose.service"] }

// eventLog records the project's container events as they happen.
type eventLog struct {
	mu     sync.Mutex
	events []event
}

// watchEvents records container events of project until the test ends.
// The engine stamps them, so their order is the order things happened.
func watchEvents(t *testing.T, project string) *eventLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "docker", "events", "--format", "{{json .}}",
		"--filter", "type=container", "--filter", "label=com.docker.compose.project="+project)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("docker events: %v", err)
	}
	l := &eventLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				l.mu.Lock()
				l.events = append(l.events, e)
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cmd.Wait()
	})
	return l
}

// first returns the earliest event of service whose action matches, and
// whether there is one.
func (l *eventLog) first(service string, match func(event) bool) (event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.service() == service && match(e) {
			return e, true
		}
	}
	return event{}, false
}

// await polls for the first event of service that matches.
func (l *eventLog) await(t *testing.T, within time.Duration, service, what string, match func(event) bool) event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if e, ok := l.first(service, match); ok {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s event within %s", service, what, within)
		}
		time.Sleep(200 * time.Millisecond) // a bounded poll of a log filled by another goroutine
	}
}

func isAction(action string) func(event) bool {
	return func(e event) bool { return e.Action == action }
}

// exited matches the exit of a container with code.
func exited(code string) func(event) bool {
	return func(e event) bool { return e.Action == "die" && e.Actor.Attributes["exitCode"] == code }
}

// writeCorpus writes the demo's generated documents, without its poison
// ones, into a directory the image's uid 10001 can read.
func writeCorpus(t *testing.T, n int, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := demo.WriteCorpus(dir, n, seed); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "poison")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
