package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/failure/replay"
)

// auditList is the JSON output of `sluice dlq audit`.
type auditList struct {
	// Entries are the newest first.
	Entries []replay.AuditEntry `json:"entries"`
}

func runDLQAudit(ctx context.Context, env Env, args []string) error {
	var c conn
	var f replay.AuditFilter
	var since, until string
	l := newLoader(env, "dlq audit", &c, false)
	l.String(&f.Action, "action", "", "", "only this action: "+strings.Join(replay.Actions, ", "))
	l.String(&f.RequestedBy, "by", "", "", "only requests by this principal, as recorded (cli:alice, or a console principal)")
	l.String(&since, "since", "", "", "requested at or after: RFC 3339 time or a duration ago (24h)")
	l.String(&until, "until", "", "", "requested before: RFC 3339 time or a duration ago (1h)")
	l.Int(&f.Limit, "limit", "", replay.DefaultAuditLimit, "at most this many entries, newest first")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq audit", rest); err != nil {
		return err
	}
	if err := completeAuditFilter(&f, since, until, time.Now()); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	entries, err := replay.ListAudit(ctx, pool, f)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, auditList{Entries: entries})
	}
	if len(entries) == 0 {
		fmt.Fprintln(env.Stderr, "no audit entries match")
		return nil
	}
	return writeAuditTable(env.Stdout, entries)
}

// completeAuditFilter parses the time flags and validates the filter.
func completeAuditFilter(f *replay.AuditFilter, since, until string, now time.Time) error {
	for _, t := range []struct {
		name, value string
		dst         *time.Time
	}{{"since", since, &f.Since}, {"until", until, &f.Until}} {
		at, err := parseTimeFlag(t.name, t.value, now)
		if err != nil {
			return err
		}
		if at != nil {
			*t.dst = *at
		}
	}
	if err := checkLimit(f.Limit, replay.MaxLimit); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

func writeAuditTable(w io.Writer, entries []replay.AuditEntry) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "REQUESTED\tID\tACTION\tBY\tSELECTED\tDISPATCHED\tSTORED\tPARKED_AGAIN\tIN_FLIGHT\tREASON\tSCOPE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			tableTime(e.RequestedAt), e.ReplayID, e.Action, cell(e.RequestedBy), e.Selected,
			replayCount(e, e.Dispatched), replayCount(e, e.Stored), replayCount(e, e.ParkedAgain), replayCount(e, e.InFlight),
			snippet(e.Reason, 40), snippet(string(e.Scope), 60))
	}
	return tw.Flush()
}

// replayCount shows an outcome count, or "-" for entries that dispatch
// nothing (dry runs, pauses).
func replayCount(e replay.AuditEntry, n int) string {
	if !replay.Dispatches(e.Action) || e.DryRun {
		return "-"
	}
	return fmt.Sprint(n)
}
