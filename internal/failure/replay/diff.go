package replay

import (
	"fmt"
	"strings"
)

// MaxDiffLines bounds each side of a line diff: a correction's audit row
// holds the diff of at most this many leading lines of the text.
const MaxDiffLines = 200

// diffContext is how many unchanged lines surround each change.
const diffContext = 3

// opKind is one step of an edit script.
type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

// op is one line of an edit script; a and b are the line's position in
// each side (for an insert, a is where it goes; for a delete, b is).
type op struct {
	kind opKind
	a, b int
	line string
}

// unifiedDiff returns the unified diff (three lines of context) turning
// before into after, empty when they are equal. It compares at most
// MaxDiffLines lines of each; truncated reports that one was longer, and
// the rest is then left out of the diff.
func unifiedDiff(before, after string) (diff string, truncated bool) {
	a, ta := diffLines(before)
	b, tb := diffLines(after)
	ops := editScript(a, b)
	var out strings.Builder
	for _, h := range hunks(ops) {
		if out.Len() == 0 {
			out.WriteString("--- before\n+++ after\n")
		}
		writeHunk(&out, ops[h[0]:h[1]])
	}
	if (ta || tb) && out.Len() == 0 && before != after {
		out.WriteString("--- before\n+++ after\n")
	}
	return out.String(), ta || tb
}

// diffLines splits s into at most MaxDiffLines lines, without their line
// ends; a final line end starts no empty line.
func diffLines(s string) ([]string, bool) {
	if s == "" {
		return nil, false
	}
	lines := strings.SplitN(strings.TrimSuffix(s, "\n"), "\n", MaxDiffLines+1)
	if len(lines) > MaxDiffLines {
		return lines[:MaxDiffLines], true
	}
	return lines, false
}

// editScript is a shortest edit script from a to b, from their longest
// common subsequence.
func editScript(a, b []string) []op {
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	ops := make([]op, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{opEqual, i, j, a[i]})
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{opDelete, i, j, a[i]})
			i++
		default:
			ops = append(ops, op{opInsert, i, j, b[j]})
			j++
		}
	}
	return ops
}

// hunks returns the [start, end) ranges of ops that make the hunks: each
// run of changes with its context, runs closer than twice the context
// merged into one.
func hunks(ops []op) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); i++ {
		if ops[i].kind == opEqual {
			continue
		}
		start, end := max(0, i-diffContext), min(len(ops), i+1+diffContext)
		if n := len(out); n > 0 && start <= out[n-1][1] {
			out[n-1][1] = end
		} else {
			out = append(out, [2]int{start, end})
		}
	}
	return out
}

func writeHunk(w *strings.Builder, ops []op) {
	var na, nb int
	for _, o := range ops {
		if o.kind != opInsert {
			na++
		}
		if o.kind != opDelete {
			nb++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(ops[0].a, na), hunkRange(ops[0].b, nb))
	for _, o := range ops {
		w.WriteByte(byte(o.kind))
		w.WriteString(o.line)
		w.WriteByte('\n')
	}
}

// hunkRange is a hunk's line range in one side: 1-based, and for an empty
// range the line after which it sits.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
