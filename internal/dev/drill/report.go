package drill

import (
	"fmt"
	"io"
)

// Check is one verdict of the drill.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

func check(name string, ok bool, format string, args ...any) Check {
	return Check{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)}
}

// CaseReport is the verdicts on one drill document.
type CaseReport struct {
	Name   string  `json:"name"`
	Marker string  `json:"marker"`
	RunID  string  `json:"run_id,omitempty"`
	Checks []Check `json:"checks"`
}

// Report is a drill's result.
type Report struct {
	Source  string       `json:"source"`
	Cases   []CaseReport `json:"cases"`
	Metrics []Check      `json:"metrics"`
}

// Passed reports whether every check passed.
func (r *Report) Passed() bool {
	for _, c := range r.Cases {
		if len(c.Checks) == 0 || !allPassed(c.Checks) {
			return false
		}
	}
	return allPassed(r.Metrics)
}

func allPassed(checks []Check) bool {
	for _, c := range checks {
		if !c.Passed {
			return false
		}
	}
	return true
}

// Write prints the report for people.
func (r *Report) Write(w io.Writer) {
	for _, c := range r.Cases {
		fmt.Fprintf(w, "%s (%s, run %s)\n", c.Name, c.Marker, c.RunID)
		writeChecks(w, c.Checks)
	}
	fmt.Fprintln(w, "embed-sim metrics")
	writeChecks(w, r.Metrics)
	if r.Passed() {
		fmt.Fprintln(w, "DRILL PASSED")
	} else {
		fmt.Fprintln(w, "DRILL FAILED")
	}
}

func writeChecks(w io.Writer, checks []Check) {
	for _, c := range checks {
		verdict := "PASS"
		if !c.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %-36s %s\n", verdict, c.Name, c.Detail)
	}
}
