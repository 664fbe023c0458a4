package replay

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	const head = "--- before\n+++ after\n"
	for _, tc := range []struct {
		name, before, after, want string
		truncated                 bool
	}{
		{name: "equal", before: "a\nb\n", after: "a\nb\n", want: ""},
		{name: "both empty", before: "", after: "", want: ""},
		{name: "one line changed", before: "a\nb\nc\n", after: "a\nB\nc\n", want: head + "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{name: "from nothing", before: "", after: "new\n", want: head + "@@ -0,0 +1 @@\n+new\n"},
		{name: "to nothing", before: "gone\nalso\n", after: "", want: head + "@@ -1,2 +0,0 @@\n-gone\n-also\n"},
		{name: "final line end only", before: "a", after: "a\n", want: ""},
		{
			name:   "distant changes make two hunks",
			before: numbered(1, 20),
			after:  strings.Replace(strings.Replace(numbered(1, 20), "line 2\n", "line two\n", 1), "line 18\n", "", 1),
			want: head + "@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n" +
				"@@ -15,6 +15,5 @@\n line 15\n line 16\n line 17\n-line 18\n line 19\n line 20\n",
		},
		{
			name:   "near changes share a hunk",
			before: numbered(1, 9),
			after:  strings.Replace(strings.Replace(numbered(1, 9), "line 1\n", "one\n", 1), "line 8\n", "eight\n", 1),
			want:   head + "@@ -1,9 +1,9 @@\n-line 1\n+one\n line 2\n line 3\n line 4\n line 5\n line 6\n line 7\n-line 8\n+eight\n line 9\n",
		},
		{
			name:   "only the first lines are compared",
			before: numbered(1, MaxDiffLines+5), after: numbered(1, MaxDiffLines) + "changed\n",
			want: head, truncated: true,
		},
	} {
		got, truncated := unifiedDiff(tc.before, tc.after)
		if got != tc.want || truncated != tc.truncated {
			t.Errorf("%s: got (truncated %v)\n%s\nwant (truncated %v)\n%s", tc.name, truncated, got, tc.truncated, tc.want)
		}
	}
}
