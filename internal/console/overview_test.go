package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The overview names, beside each class's and each source's count, the
// most attempts any of their dead letters took: the fixture's bad
// requests and transient failures went up to 6 (attempts cycle 1 to 6),
// its one escalation took 4.
func TestOverviewShowsWorstAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.get(t, "/fragment/overview", viewerSecret)
	if code != http.StatusOK {
		t.Fatalf("overview: %d", code)
	}
	for _, c := range []struct{ row, want string }{
		{`class=transient_exhausted">transient_exhausted</a></td><td>retry</td><td class="n">120</td>`, "6"},
		{`class=bad_request">bad_request</a></td><td>quarantine</td><td class="n">30</td>`, "6"},
		{`class=policy_secret">policy_secret</a></td><td>escalate</td><td class="n">1</td>`, "4"},
		{`source=alpha">alpha</a></td><td class="n">120</td><td class="n">120</td><td class="n">0</td><td class="n">0</td>`, "6"},
	} {
		m := regexp.MustCompile(regexp.QuoteMeta(c.row) + `<td class="n">(\d+)</td>`).FindStringSubmatch(body)
		if m == nil || m[1] != c.want {
			t.Errorf("row %s: worst attempts %v, want %s\n%s", c.row, m, c.want, body)
		}
	}
	// A run's page groups its dead letters by class the same way.
	code, body = b.get(t, "/runs/run-beta", viewerSecret)
	row := `class=bad_request">bad_request</a></td><td>quarantine</td><td class="n">30</td><td class="n">6</td>`
	if code != http.StatusOK || !strings.Contains(body, row) {
		t.Errorf("run page: %d, lacks %s\n%s", code, row, body)
	}
}
