package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/classify"
)

// dlqStats is the output of `sluice dlq stats`: the diagnostics of an
// unresolved DLQ by error class, and how much of it the replayer may take.
type dlqStats struct {
	// AsOf is the database's clock when the numbers were read; ready and
	// backing off are relative to it.
	AsOf time.Time `json:"as_of"`
	// Unresolved sums every class.
	Unresolved classStats `json:"unresolved"`
	// Resolved counts dead letters whose chunk has since been stored.
	Resolved int64 `json:"resolved"`
	// ByClass has one row per (error_class, disposition), largest first.
	ByClass []classStats `json:"by_class"`
	// Replay is the replay readiness of the unresolved ones the replayer
	// replays on its own (deadletter.Replayable).
	Replay replayReadiness `json:"replay"`
	// Passes are the failures by replay generation over the last
	// deadletter.PassWindow: whether the DLQ drains or plateaus.
	Passes []deadletter.Pass `json:"replay_passes"`
}

// classStats is one row of the by-class diagnostic query. A row whose
// average attempts equals the retry budget is exhausted transient work; an
// average of 1 is permanent failures that never retried. WorstAttempts
// shows the one chunk an average hides: a row of mostly first-attempt
// failures with one chunk that spent its whole budget.
type classStats struct {
	ErrorClass  string     `json:"error_class,omitempty"`
	Disposition string     `json:"disposition,omitempty"`
	Count       int64      `json:"count"`
	Oldest      *time.Time `json:"oldest_first_failed_at"`
	Newest      *time.Time `json:"newest_last_failed_at"`
	AvgAttempts float64    `json:"avg_attempts"`
	// WorstAttempts is the most attempts any of the row's dead letters
	// took.
	WorstAttempts int64 `json:"worst_attempts"`
	attempts      int64
}

// replayReadiness splits the unresolved dead letters the replayer
// replays on its own by what it can do with them now. The four counts are
// disjoint.
type replayReadiness struct {
	// ErrorClasses are the classes counted, classify.ExhaustedTransientClasses.
	ErrorClasses []string `json:"error_classes"`
	// Ready are due (next_retry_at <= now) and not yet replayed since they
	// last failed.
	Ready int64 `json:"ready"`
	// BackingOff are not due yet.
	BackingOff int64 `json:"backing_off"`
	// Dispatched were replayed after their last failure; their outcome is
	// pending.
	Dispatched int64 `json:"dispatched"`
	// Unscheduled have no next_retry_at: only an operator replays them.
	Unscheduled int64 `json:"unscheduled"`
	// NextDue is the earliest next_retry_at still in the future.
	NextDue *time.Time `json:"next_due_at"`
}

func runDLQStats(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "dlq stats", &c, false)
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq stats", rest); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := readDLQStats(ctx, pool)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, st)
	}
	return printDLQStats(env.Stdout, st)
}

func readDLQStats(ctx context.Context, pool *pgxpool.Pool) (*dlqStats, error) {
	open, err := deadletter.OpenByClass(ctx, pool)
	if err != nil {
		return nil, err
	}
	st := &dlqStats{ByClass: make([]classStats, len(open)), Replay: replayReadiness{ErrorClasses: classify.ExhaustedTransientClasses()}}
	for i, o := range open {
		s := &st.ByClass[i]
		*s = classStats{ErrorClass: o.ErrorClass, Disposition: o.Disposition, Count: o.Count, Oldest: o.Oldest, Newest: o.Newest,
			attempts: o.Attempts, WorstAttempts: o.Worst}
		s.AvgAttempts = average(s.attempts, s.Count)
		st.Unresolved.add(*s)
	}
	st.Unresolved.AvgAttempts = average(st.Unresolved.attempts, st.Unresolved.Count)
	rd, err := deadletter.ReadReadiness(ctx, pool)
	if err != nil {
		return nil, err
	}
	st.AsOf, st.Resolved = rd.AsOf, rd.Resolved
	st.Replay.Ready, st.Replay.BackingOff, st.Replay.Unscheduled, st.Replay.Dispatched = rd.Ready, rd.BackingOff, rd.Manual, rd.Dispatched
	st.Replay.NextDue = rd.NextDue
	if st.Passes, err = deadletter.ReplayPasses(ctx, pool, st.AsOf.Add(-deadletter.PassWindow)); err != nil {
		return nil, err
	}
	if st.Passes == nil {
		st.Passes = []deadletter.Pass{}
	}
	if st.ByClass == nil {
		st.ByClass = []classStats{} // a JSON array, never null
	}
	return st, nil
}

// add folds one class into a total.
func (s *classStats) add(o classStats) {
	s.Count += o.Count
	s.attempts += o.attempts
	s.WorstAttempts = max(s.WorstAttempts, o.WorstAttempts)
	if o.Oldest != nil && (s.Oldest == nil || o.Oldest.Before(*s.Oldest)) {
		s.Oldest = o.Oldest
	}
	if o.Newest != nil && (s.Newest == nil || o.Newest.After(*s.Newest)) {
		s.Newest = o.Newest
	}
}

// average is sum/n to two decimals, 0 for no rows.
func average(sum, n int64) float64 {
	if n == 0 {
		return 0
	}
	return math.Round(float64(sum)/float64(n)*100) / 100
}

func printDLQStats(w io.Writer, st *dlqStats) error {
	tw := newTable(w)
	if len(st.ByClass) == 0 {
		fmt.Fprintln(tw, "no unresolved dead letters")
	} else {
		fmt.Fprintln(tw, "ERROR_CLASS\tDISPOSITION\tCOUNT\tOLDEST_FIRST_FAILED\tNEWEST_LAST_FAILED\tAVG_ATTEMPTS\tWORST_ATTEMPTS")
		for _, s := range append(st.ByClass, st.Unresolved) {
			class, disp := cell(s.ErrorClass), cell(s.Disposition)
			if s.ErrorClass == "" {
				class, disp = "total", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.1f\t%d\n", class, disp, s.Count, tableTimePtr(s.Oldest), tableTimePtr(s.Newest),
				s.AvgAttempts, s.WorstAttempts)
		}
	}
	fmt.Fprintf(tw, "\nresolved (chunk stored since): %d\n", st.Resolved)
	r := st.Replay
	fmt.Fprintf(tw, "\nreplay readiness (%s, unresolved, as of %s):\n", strings.Join(r.ErrorClasses, ", "), tableTime(st.AsOf))
	fmt.Fprintf(tw, "  ready now\t%d\n", r.Ready)
	fmt.Fprintf(tw, "  still backing off\t%d\n", r.BackingOff)
	next := tableTimePtr(r.NextDue)
	if r.NextDue != nil {
		next += fmt.Sprintf(" (in %s)", r.NextDue.Sub(st.AsOf).Round(time.Second))
	}
	fmt.Fprintf(tw, "  next due\t%s\n", next)
	fmt.Fprintf(tw, "  replay dispatched, outcome pending\t%d\n", r.Dispatched)
	fmt.Fprintf(tw, "  no retry time (operator only)\t%d\n", r.Unscheduled)
	if len(st.Passes) > 0 {
		fmt.Fprintf(tw, "\nreplay passes (failures by replay generation, last %s):\n", deadletter.PassWindow)
		for _, p := range st.Passes {
			if p.Gen == 0 {
				fmt.Fprintf(tw, "  generation %d\t%d\n", p.Gen, p.Failed)
				continue
			}
			fmt.Fprintf(tw, "  generation %d\t%d\t(%.0f%% of the pass before failed again)\n", p.Gen, p.Failed, 100*p.CarriedOver)
		}
		verdict := "draining"
		if deadletter.Carryover(st.Passes) >= deadletter.PlateauCarryover {
			verdict = "plateaued: the latest replays failed again for most of what they took"
		}
		fmt.Fprintf(tw, "  %s\n", verdict)
	}
	return tw.Flush()
}
