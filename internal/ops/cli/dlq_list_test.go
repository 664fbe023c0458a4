package cli_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestDLQListFilters(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	long := "https://example.com/" + strings.Repeat("very-long-path/", 10) + "final-name.html"
	seedDLRows(t, db.Pool,
		dlRow{id: "a1", source: "alpha", class: "bad_request", run: "r1", lastAgo: 10 * time.Minute, nativeID: long},
		dlRow{id: "a2", source: "alpha", class: "rate_limited", disposition: messages.DispositionRetry, run: "r1", lastAgo: 2 * time.Hour, retryIn: dlDur(time.Hour)},
		dlRow{id: "b1", source: "beta", class: "bad_request", run: "r2", lastAgo: 30 * time.Minute},
		dlRow{id: "b2", source: "beta", class: "policy_violation", disposition: messages.DispositionEscalate, run: "r2", lastAgo: 3 * time.Hour},
		dlRow{id: "b3", source: "beta", class: "bad_request", run: "r2", lastAgo: time.Hour, resolved: true},
	)
	env := map[string]string{"DATABASE_URL": db.URL}
	for _, tc := range []struct {
		args    []string
		want    []string
		matched int
	}{
		{nil, []string{"a1", "b1", "a2", "b2"}, 4},
		{[]string{"--all"}, []string{"a1", "b1", "b3", "a2", "b2"}, 5},
		{[]string{"--unresolved=false", "--source", "beta"}, []string{"b1", "b3", "b2"}, 3},
		{[]string{"--error-class", "bad_request"}, []string{"a1", "b1"}, 2},
		{[]string{"--disposition", "escalate"}, []string{"b2"}, 1},
		{[]string{"--since", "90m"}, []string{"a1", "b1"}, 2},
		{[]string{"--until", "90m"}, []string{"a2", "b2"}, 2},
		{[]string{"--since", time.Now().Add(-150 * time.Minute).Format(time.RFC3339), "--until", "20m"}, []string{"b1", "a2"}, 2},
		{[]string{"--run", "r1"}, []string{"a1", "a2"}, 2},
		{[]string{"--limit", "2"}, []string{"a1", "b1"}, 4},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var list struct {
				Matched     int `json:"matched"`
				DeadLetters []struct {
					ID    string `json:"dead_letter_id"`
					State string `json:"state"`
				} `json:"dead_letters"`
			}
			sluiceDecode(t, env, &list, append([]string{"dlq", "ls"}, tc.args...)...)
			var ids []string
			for _, d := range list.DeadLetters {
				ids = append(ids, d.ID)
			}
			if !slices.Equal(ids, tc.want) || list.Matched != tc.matched {
				t.Errorf("ids %v matched %d; want %v matched %d", ids, list.Matched, tc.want, tc.matched)
			}
		})
	}

	code, out, errOut := sluice(t, env, "dlq", "ls", "--limit", "3")
	if code != 0 {
		t.Fatalf("dlq ls: exit %d, %s", code, errOut)
	}
	if f := rowFields(t, out, "a1 "); f[1] != "alpha" || len([]rune(f[2])) != 40 || !strings.HasSuffix(f[2], "final-name.html") || f[4] != "bad_request" {
		t.Errorf("a1 row %q: want the native id cut to 40 runes keeping its end", f)
	}
	if f := rowFields(t, out, "a2 "); f[len(f)-3] != "backing" {
		t.Errorf("a2 row %q: want state backing off", f)
	}
	if !strings.Contains(errOut, "showing 3 of 4") {
		t.Errorf("stderr %q: want a note that more matched", errOut)
	}
}

func TestDLQListRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "yesterday"}, "RFC 3339"},
		{[]string{"--until", "-5m"}, "duration"},
		{[]string{"--since", "1h", "--until", "2h"}, "not before"},
		{[]string{"--disposition", "retried"}, "use retry, quarantine"},
		{[]string{"--limit", "0"}, "--limit 0"},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--nope"}, "flag provided but not defined"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := sluice(t, nil, append([]string{"dlq", "ls"}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d stdout %q stderr %q; want 2, no output and %q", code, out, errOut, tc.want)
			}
		})
	}
}
