package producer

import (
	"bytes"
	"strings"
	"testing"
)

// The summary's text says what was escalated and re-decoded, and says
// nothing of either when there was none.
func TestPrintSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		sum       Summary
		want, not []string
	}{
		{"quiet", Summary{RunID: "r"}, nil, []string{"escalated", "re-decoded"}},
		{"escalated and re-decoded", Summary{RunID: "r", ParkedDocs: 3, Escalated: 2, Redecoded: map[string]int{"utf-16le": 1, "windows-1252": 4}},
			[]string{"chunks escalated: 2 (", "sluice dlq ls --disposition escalate", "documents re-decoded: windows-1252 4, utf-16le 1 ("}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printSummary(&b, c.sum, 0, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("summary has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
