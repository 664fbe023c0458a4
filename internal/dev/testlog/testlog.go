// Package testlog reads the event stream of go test -json and prints what
// a person needs from it: the result line of every package, the whole
// output of every failed test and of every failed package, and where the
// time went. The stream itself is kept, so that a slow or failed run can
// be examined test by test afterwards.
package testlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Event is one line of go test -json (see go doc test2json).
type Event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // of build-output and build-fail events
	Test       string
	Elapsed    float64 // seconds, on pass, fail and skip
	Output     string
}

// Timing is how long a package or a top-level test ran.
type Timing struct {
	Name    string
	Elapsed time.Duration
	Failed  bool
}

// Summary is what a stream held once it ended.
type Summary struct {
	Packages []Timing // every package that ran tests, in the order they ended
	Tests    []Timing // every top-level test, in the order they ended
	Failed   []string // failed packages and tests, "pkg" or "pkg TestName"
	// Start and End are the first and last events' times.
	Start, End time.Time
}

// follower holds the output of tests that have not ended yet.
type follower struct {
	out     io.Writer
	pending map[string]*bytes.Buffer // by package, then package+" "+top-level test
	sum     Summary
}

// Follow reads events from r until it ends, copying each line to raw when
// raw is not nil and writing the readable form to out: package result
// lines, build output, and the full output of what failed. A line that is
// not an event (a tool's own message) is written to out as it is.
func Follow(r io.Reader, out, raw io.Writer) (*Summary, error) {
	f := &follower{out: out, pending: map[string]*bytes.Buffer{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if raw != nil {
			if _, err := raw.Write(append(line, '\n')); err != nil {
				return nil, fmt.Errorf("keep the event stream: %w", err)
			}
		}
		var e Event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		f.event(e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the event stream: %w", err)
	}
	f.flushAll("") // a stream cut short leaves its output unexplained otherwise
	return &f.sum, nil
}

func (f *follower) event(e Event) {
	if !e.Time.IsZero() {
		if f.sum.Start.IsZero() {
			f.sum.Start = e.Time
		}
		f.sum.End = e.Time
	}
	switch e.Action {
	case "build-output":
		io.WriteString(f.out, e.Output)
		return
	case "build-fail":
		f.sum.Failed = append(f.sum.Failed, e.ImportPath)
		return
	}
	key := e.Package
	if e.Test != "" {
		key += " " + topLevel(e.Test)
	}
	switch {
	case e.Action == "output" && e.Test == "" && isResultLine(e.Output):
		if strings.HasPrefix(e.Output, "FAIL") {
			f.flushAll(e.Package) // what explains the failure comes before it
		}
		io.WriteString(f.out, e.Output)
	case e.Action == "output":
		f.buffer(key).WriteString(e.Output)
	case e.Test != "" && e.Test != topLevel(e.Test):
		// a subtest's end: its output stays with its top-level test's
	case e.Action == "pass", e.Action == "skip":
		f.ended(e, key, false)
	case e.Action == "fail":
		f.ended(e, key, true)
	}
}

// ended records a top-level test or a package that finished, and writes
// out its output if it failed.
func (f *follower) ended(e Event, key string, failed bool) {
	t := Timing{Name: key, Elapsed: time.Duration(e.Elapsed * float64(time.Second)), Failed: failed}
	if e.Test != "" {
		f.sum.Tests = append(f.sum.Tests, t)
	} else if e.Elapsed > 0 || failed {
		f.sum.Packages = append(f.sum.Packages, t)
	}
	if failed {
		f.sum.Failed = append(f.sum.Failed, key)
	}
	if e.Test != "" {
		if failed {
			f.flush(key)
		}
		delete(f.pending, key)
		return
	}
	if failed {
		f.flushAll(e.Package)
	}
	for k := range f.pending {
		if k == e.Package || strings.HasPrefix(k, e.Package+" ") {
			delete(f.pending, k)
		}
	}
}

func (f *follower) buffer(key string) *bytes.Buffer {
	b, ok := f.pending[key]
	if !ok {
		b = new(bytes.Buffer)
		f.pending[key] = b
	}
	return b
}

func (f *follower) flush(key string) {
	if b, ok := f.pending[key]; ok {
		f.out.Write(b.Bytes())
	}
}

// flushAll writes out the output still held for a package (every package
// when pkg is empty): its tests that never ended, such as the one running
// when a timeout struck, and its own lines.
func (f *follower) flushAll(pkg string) {
	for _, k := range slices.Sorted(maps.Keys(f.pending)) {
		if pkg == "" || k == pkg || strings.HasPrefix(k, pkg+" ") {
			f.out.Write(f.pending[k].Bytes())
			delete(f.pending, k)
		}
	}
}

// isResultLine tells a package's closing line ("ok  \tpkg\t1.2s",
// "FAIL\tpkg\t3s", "?   \tpkg\t[no test files]") from its other output.
func isResultLine(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "FAIL\t") || strings.HasPrefix(s, "?   \t")
}

func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}
