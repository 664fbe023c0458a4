package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// maxListLimit bounds --limit of dlq ls: past it, a table is no longer
// something to read; use SQL or --json with narrower filters.
const maxListLimit = 10000

// nativeIDWidth is how much of a source_native_id a table shows.
const nativeIDWidth = 40

// dlqFilter is the scope of `sluice dlq ls`. Empty strings and nil times
// do not filter. Since and Until bound last_failed_at, as dlq replay does.
// Defaults of the listing commands' --limit.
const (
	// DefaultListLimit is how many dead letters `sluice dlq ls` lists.
	DefaultListLimit = 50
	// DefaultRunsLimit is how many runs `sluice runs` lists.
	DefaultRunsLimit = 20
)

type dlqFilter struct {
	Source, ErrorClass, Disposition, Run string
	Since, Until                         *time.Time
	UnresolvedOnly                       bool
	Limit                                int
}

// dlqList is the JSON output of `sluice dlq ls`.
type dlqList struct {
	// Matched counts every dead letter the filters select, beyond Limit.
	Matched int64 `json:"matched"`
	// Limit is the --limit applied.
	Limit int `json:"limit"`
	// DeadLetters are the newest failures first.
	DeadLetters []dlqListItem `json:"dead_letters"`
}

// dlqListItem is one dead letter as dlq ls lists it.
type dlqListItem struct {
	DeadLetterID   string     `json:"dead_letter_id"`
	DocID          string     `json:"doc_id"`
	ChunkIndex     int        `json:"chunk_index"`
	SourceID       string     `json:"source_id"`
	SourceNativeID string     `json:"source_native_id"`
	RunID          *string    `json:"run_id"`
	Disposition    string     `json:"disposition"`
	ErrorClass     string     `json:"error_class"`
	ErrorCode      *string    `json:"error_code"`
	Attempts       int        `json:"attempts"`
	ReplayGen      int        `json:"replay_gen"`
	FirstFailedAt  time.Time  `json:"first_failed_at"`
	LastFailedAt   time.Time  `json:"last_failed_at"`
	NextRetryAt    *time.Time `json:"next_retry_at"`
	ReplayedAt     *time.Time `json:"replayed_at"`
	ResolvedAt     *time.Time `json:"resolved_at"`
	// State is the dead letter's deadletter.State.
	State deadletter.State `json:"state"`
}

func runDLQList(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "dlq ls", &c, false)
	var f dlqFilter
	var since, until string
	var all bool
	l.String(&f.Source, "source", "", "", "only this source_id")
	l.String(&f.ErrorClass, "error-class", "", "", "only this error class (e.g. rate_limited, transient_exhausted)")
	l.String(&f.Disposition, "disposition", "", "", "only this disposition: retry, quarantine, ambiguous or escalate")
	l.String(&since, "since", "", "", "last failed at or after: RFC 3339 time or a duration ago (24h)")
	l.String(&until, "until", "", "", "last failed before: RFC 3339 time or a duration ago (1h)")
	l.String(&f.Run, "run", "", "", "only dead letters of this ingest run_id")
	l.Bool(&f.UnresolvedOnly, "unresolved", "", true, "only dead letters not resolved yet")
	l.Bool(&all, "all", "", false, "include resolved dead letters (same as --unresolved=false)")
	l.Int(&f.Limit, "limit", "", DefaultListLimit, "at most this many rows, newest failure first")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq ls", rest); err != nil {
		return err
	}
	if err := f.complete(since, until, all, time.Now()); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	list, err := listDeadLetters(ctx, pool, f)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, list)
	}
	return printDLQList(env, list)
}

// complete parses the time flags and validates the filter.
func (f *dlqFilter) complete(since, until string, all bool, now time.Time) error {
	var err error
	if f.Since, err = parseTimeFlag("since", since, now); err != nil {
		return err
	}
	if f.Until, err = parseTimeFlag("until", until, now); err != nil {
		return err
	}
	if f.Since != nil && f.Until != nil && !f.Since.Before(*f.Until) {
		return usageErr("--since %s is not before --until %s", tableTime(*f.Since), tableTime(*f.Until))
	}
	switch f.Disposition {
	case "", messages.DispositionRetry, messages.DispositionQuarantine, messages.DispositionAmbiguous, messages.DispositionEscalate:
	default:
		return usageErr("--disposition %q: use retry, quarantine, ambiguous or escalate", f.Disposition)
	}
	if all {
		f.UnresolvedOnly = false
	}
	return checkLimit(f.Limit, maxListLimit)
}

func listDeadLetters(ctx context.Context, pool *pgxpool.Pool, f dlqFilter) (*dlqList, error) {
	filter := deadletter.Filter{Source: f.Source, ErrorClass: f.ErrorClass, Disposition: f.Disposition, Run: f.Run}
	if f.Since != nil {
		filter.Since = *f.Since
	}
	if f.Until != nil {
		filter.Until = *f.Until
	}
	if f.UnresolvedOnly {
		filter.State = deadletter.StateOpen
	}
	found, matched, err := deadletter.List(ctx, pool, filter, f.Limit)
	if err != nil {
		return nil, err
	}
	list := &dlqList{Matched: matched, Limit: f.Limit, DeadLetters: make([]dlqListItem, len(found))}
	for i, d := range found {
		list.DeadLetters[i] = dlqListItem{
			DeadLetterID: d.ID, DocID: d.DocID, ChunkIndex: d.ChunkIndex, SourceID: d.Source, SourceNativeID: d.NativeID,
			RunID: d.RunID, Disposition: d.Disposition, ErrorClass: d.ErrorClass, ErrorCode: d.ErrorCode,
			Attempts: d.Attempts, ReplayGen: d.ReplayGen, FirstFailedAt: d.FirstFailedAt, LastFailedAt: d.LastFailedAt,
			NextRetryAt: d.NextRetryAt, ReplayedAt: d.ReplayedAt, ResolvedAt: d.ResolvedAt, State: d.State,
		}
	}
	return list, nil
}

func printDLQList(env Env, list *dlqList) error {
	if len(list.DeadLetters) == 0 {
		fmt.Fprintln(env.Stderr, "no dead letters match")
		return nil
	}
	if err := writeDLQTable(env.Stdout, list.DeadLetters); err != nil {
		return err
	}
	if shown := int64(len(list.DeadLetters)); list.Matched > shown {
		fmt.Fprintf(env.Stderr, "showing %d of %d matching dead letters: narrow the filters or raise --limit\n", shown, list.Matched)
	}
	return nil
}

func writeDLQTable(w io.Writer, items []dlqListItem) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "DEAD_LETTER_ID\tSOURCE\tSOURCE_NATIVE_ID\tCHUNK\tERROR_CLASS\tATTEMPTS\tGEN\tLAST_FAILED\tSTATE\tSINCE/DUE")
	for _, d := range items {
		when := "-"
		switch d.State {
		case deadletter.StateResolved:
			when = tableTimePtr(d.ResolvedAt)
		case deadletter.StateDispatched:
			when = tableTimePtr(d.ReplayedAt)
		case deadletter.StateReady, deadletter.StateBackingOff:
			when = tableTimePtr(d.NextRetryAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n",
			d.DeadLetterID, cell(d.SourceID), elide(cell(d.SourceNativeID), nativeIDWidth), d.ChunkIndex,
			cell(d.ErrorClass), d.Attempts, d.ReplayGen, tableTime(d.LastFailedAt), strings.ReplaceAll(string(d.State), "_", " "), when)
	}
	return tw.Flush()
}
