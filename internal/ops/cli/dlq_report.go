package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/failure/shape"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// reportExamples is how many dead letters each report cell names.
const reportExamples = 3

// dlqReport is the output of `sluice dlq report`: the dead letters that
// last failed in [Since, Until) by source × error class, and their shape.
type dlqReport struct {
	Since      time.Time        `json:"since"`
	Until      time.Time        `json:"until"`
	Thresholds shape.Thresholds `json:"thresholds"`
	// Total counts every dead letter in the window, resolved or not: the
	// shape is about what failed, not about what is still open.
	Total int `json:"total"`
	// Unresolved counts those of Total not resolved yet.
	Unresolved int           `json:"unresolved"`
	Shape      shape.Verdict `json:"shape"`
	// ErrorClasses are the matrix columns, largest first.
	ErrorClasses []string `json:"error_classes"`
	// Sources are the matrix rows, largest first. A source that ran in the
	// window without dead letters has a row with no cells.
	Sources []reportSource `json:"sources"`
}

// reportSource is one matrix row.
type reportSource struct {
	SourceID   string `json:"source_id"`
	Total      int    `json:"total"`
	Unresolved int    `json:"unresolved"`
	// Cells are the non-empty cells, in ErrorClasses order.
	Cells []reportCell `json:"cells"`
}

// reportCell is one source × error class.
type reportCell struct {
	ErrorClass string `json:"error_class"`
	Count      int    `json:"count"`
	Unresolved int    `json:"unresolved"`
	// Examples are the newest failures, at most reportExamples.
	Examples []reportExample `json:"examples"`
}

// reportExample names one dead letter of a cell.
type reportExample struct {
	DeadLetterID   string `json:"dead_letter_id"`
	SourceNativeID string `json:"source_native_id"`
}

func runDLQReport(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "dlq report", &c, false)
	var since, until string
	var th shape.Thresholds
	l.String(&since, "since", "", "24h", "window start: RFC 3339 time or a duration ago")
	l.String(&until, "until", "", "", "window end: RFC 3339 time or a duration ago; empty means now")
	l.Int(&th.SpikeCount, "spike", "", shape.DefaultThresholds.SpikeCount, "dead letters in the window at or above which a source is spiking")
	l.Float(&th.OneSourceShare, "one-source-share", "", shape.DefaultThresholds.OneSourceShare, "share of all dead letters a spiking source must hold for 'spike in one source'")
	l.Float(&th.EverySourceShare, "every-source-share", "", shape.DefaultThresholds.EverySourceShare, "share of active sources that must spike for 'spike in every source'")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq report", rest); err != nil {
		return err
	}
	if err := validateThresholds(th); err != nil {
		return err
	}
	from, to, err := reportWindow(since, until, time.Now())
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := buildReport(ctx, pool, from, to, th)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, rep)
	}
	return printReport(env.Stdout, rep)
}

// reportWindow resolves --since and --until to [from, to).
func reportWindow(since, until string, now time.Time) (time.Time, time.Time, error) {
	if since == "" {
		return time.Time{}, time.Time{}, usageErr("--since is empty: give the window start, e.g. 24h")
	}
	from, err := parseTimeFlag("since", since, now)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	to := &now
	if until != "" {
		if to, err = parseTimeFlag("until", until, now); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	if !from.Before(*to) {
		return time.Time{}, time.Time{}, usageErr("--since %s is not before the window end %s", tableTime(*from), tableTime(*to))
	}
	// Postgres keeps microseconds; so does the window it reports.
	return from.UTC().Truncate(time.Microsecond), to.UTC().Truncate(time.Microsecond), nil
}

// buildReport reads the matrix and the active sources, then labels them.
func buildReport(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, th shape.Thresholds) (*dlqReport, error) {
	cells, err := readReportCells(ctx, pool, from, to)
	if err != nil {
		return nil, err
	}
	active, err := runs.ActiveSources(ctx, pool, from, to)
	if err != nil {
		return nil, err
	}
	rep := &dlqReport{Since: from, Until: to, Thresholds: th}
	rep.assemble(cells, active)
	return rep, nil
}

// assemble builds the matrix rows and columns, largest first, and the shape.
func (rep *dlqReport) assemble(cells []sourceCell, active []string) {
	bySource := map[string]*reportSource{}
	source := func(id string) *reportSource {
		if bySource[id] == nil {
			bySource[id] = &reportSource{SourceID: id, Cells: []reportCell{}}
		}
		return bySource[id]
	}
	for _, id := range active {
		source(id)
	}
	classTotals := map[string]int{}
	for _, c := range cells {
		s := source(c.source)
		s.Cells = append(s.Cells, c.reportCell)
		s.Total += c.Count
		s.Unresolved += c.Unresolved
		classTotals[c.ErrorClass] += c.Count
		rep.Total += c.Count
		rep.Unresolved += c.Unresolved
	}
	rep.ErrorClasses = byCountDesc(classTotals)
	column := map[string]int{}
	for i, c := range rep.ErrorClasses {
		column[c] = i
	}
	counts, window := map[string]int{}, shape.Window{}
	for id, s := range bySource {
		counts[id], window[id] = s.Total, map[string]int{}
		for _, c := range s.Cells {
			window[id][c.ErrorClass] += c.Count
		}
		sort.Slice(s.Cells, func(i, j int) bool { return column[s.Cells[i].ErrorClass] < column[s.Cells[j].ErrorClass] })
	}
	rep.Sources = make([]reportSource, 0, len(bySource))
	for _, id := range byCountDesc(counts) {
		rep.Sources = append(rep.Sources, *bySource[id])
	}
	rep.Shape = shape.Label(window, rep.Thresholds)
}

// sourceCell is a report cell with its source.
type sourceCell struct {
	source string
	reportCell
}

func readReportCells(ctx context.Context, pool *pgxpool.Pool, from, to time.Time) ([]sourceCell, error) {
	found, err := deadletter.Cells(ctx, pool, from, to, reportExamples)
	if err != nil {
		return nil, err
	}
	cells := make([]sourceCell, len(found))
	for i, f := range found {
		c := sourceCell{source: f.Source, reportCell: reportCell{ErrorClass: f.ErrorClass, Count: f.Count, Unresolved: f.Unresolved}}
		for _, e := range f.Examples {
			c.Examples = append(c.Examples, reportExample{DeadLetterID: e.ID, SourceNativeID: e.NativeID})
		}
		cells[i] = c
	}
	return cells, nil
}

// byCountDesc returns the keys of m, largest count first, then by name.
func byCountDesc(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func printReport(w io.Writer, rep *dlqReport) error {
	fmt.Fprintf(w, "dead letters that last failed in [%s, %s), by source × error class\n\n", tableTime(rep.Since), tableTime(rep.Until))
	tw := newTable(w)
	fmt.Fprint(tw, "SOURCE\tTOTAL\tUNRESOLVED")
	for _, c := range rep.ErrorClasses {
		fmt.Fprintf(tw, "\t%s", cell(c))
	}
	fmt.Fprintln(tw)
	classTotals := map[string]int{}
	for _, s := range rep.Sources {
		counts := map[string]int{}
		for _, c := range s.Cells {
			counts[c.ErrorClass] = c.Count
			classTotals[c.ErrorClass] += c.Count
		}
		fmt.Fprintf(tw, "%s\t%d\t%d%s\n", cell(s.SourceID), s.Total, s.Unresolved, reportCounts(rep.ErrorClasses, counts))
	}
	fmt.Fprintf(tw, "total\t%d\t%d%s\n", rep.Total, rep.Unresolved, reportCounts(rep.ErrorClasses, classTotals))
	if err := tw.Flush(); err != nil {
		return err
	}
	th := rep.Thresholds
	fmt.Fprintf(w, "\nshape: %s\n  %s\n  thresholds: --spike %d --one-source-share %g --every-source-share %g\n",
		rep.Shape.Label, printable(rep.Shape.Reason), th.SpikeCount, th.OneSourceShare, th.EverySourceShare)
	return printReportExamples(w, rep)
}

// reportCounts renders one matrix row's cells, "-" for none.
func reportCounts(classes []string, counts map[string]int) string {
	var b strings.Builder
	for _, c := range classes {
		if n, ok := counts[c]; ok {
			fmt.Fprintf(&b, "\t%d", n)
		} else {
			b.WriteString("\t-")
		}
	}
	return b.String()
}

func printReportExamples(w io.Writer, rep *dlqReport) error {
	if rep.Total == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nexamples, newest failure first:")
	tw := newTable(w)
	for _, s := range rep.Sources {
		for _, c := range s.Cells {
			// A line without tabs ends the column block: each cell's
			// examples align among themselves.
			fmt.Fprintf(tw, "  %s / %s (%d)\n", cell(s.SourceID), cell(c.ErrorClass), c.Count)
			for _, e := range c.Examples {
				fmt.Fprintf(tw, "    %s\t%s\n", e.DeadLetterID, elide(cell(e.SourceNativeID), 60))
			}
		}
	}
	return tw.Flush()
}
