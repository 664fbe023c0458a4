package testlog

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Write prints the summary: the wall time from the first event to the
// last, the slowest packages and top-level tests (at most n of each), and
// what failed. Names lose the prefix trim, the module's path.
func (s *Summary) Write(w io.Writer, n int, trim string) {
	name := func(t Timing) string {
		return strings.TrimPrefix(t.Name, trim)
	}
	fmt.Fprintf(w, "test time: %s from the first event to the last; %d packages, %d top-level tests\n",
		s.End.Sub(s.Start).Round(time.Second), len(s.Packages), len(s.Tests))
	for _, list := range []struct {
		title string
		of    []Timing
	}{{"slowest packages", s.Packages}, {"slowest tests", s.Tests}} {
		fmt.Fprintf(w, "%s:\n", list.title)
		for _, t := range slowest(list.of, n) {
			fmt.Fprintf(w, "  %7.1fs  %s\n", t.Elapsed.Seconds(), name(t))
		}
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(w, "failed:\n")
		for _, f := range s.Failed {
			fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(f, trim))
		}
	}
}

// slowest returns the n longest timings, longest first.
func slowest(ts []Timing, n int) []Timing {
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b Timing) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	return ts[:min(n, len(ts))]
}
