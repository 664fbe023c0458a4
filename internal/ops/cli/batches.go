package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/store/bulk/view"
)

// maxBatchesLimit bounds --limit of batches ls.
const maxBatchesLimit = 1000

func batchesCommands() map[string]command {
	return map[string]command{
		"ls":   {"list bulk batches, newest first: ls [--source S] [--state X] [--limit N]", runBatchesList},
		"show": {"one bulk batch and its members counted by state and error class: show ID", runBatchesShow},
	}
}

func runBatches(ctx context.Context, env Env, args []string) error {
	return subcommand(ctx, env, "batches", batchesCommands(), args)
}

// batchesList is the JSON output of `sluice batches ls`.
type batchesList struct {
	// Batches are the newest first.
	Batches []view.BatchView `json:"batches"`
}

// batchDetail is the JSON output of `sluice batches show`.
type batchDetail struct {
	view.BatchView
	Members []view.MemberCount `json:"members"`
}

func runBatchesList(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "batches ls", &c, false)
	var f view.ListFilter
	var state string
	l.String(&f.Source, "source", "", "", "only batches of this source_id")
	l.String(&state, "state", "", "", "only batches in this state: "+stateNames())
	l.Int(&f.Limit, "limit", "", view.DefaultListLimit, "at most this many batches, newest first")
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("batches ls", rest); err != nil {
		return err
	}
	if f.State = view.State(state); state != "" && !slices.Contains(view.States, f.State) {
		return usageErr("--state %q: use one of %s", state, stateNames())
	}
	if err := checkLimit(f.Limit, maxBatchesLimit); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	vs, err := view.List(ctx, pool, f)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, batchesList{Batches: vs})
	}
	if len(vs) == 0 {
		fmt.Fprintln(env.Stderr, "no bulk batches match")
		return nil
	}
	return printBatches(env.Stdout, vs)
}

func stateNames() string {
	names := make([]string, len(view.States))
	for i, s := range view.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// printBatches prints the batches, then the cancellation asked of each
// still running and the last error of each that has one.
func printBatches(w io.Writer, vs []view.BatchView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "BATCH\tSOURCE\tGEN\tSTATE\tENDED\tCHUNKS\tREQUESTS\tTOKENS\tSTORED\tPARKED\tREQUEUED\tOPENED\tPROVIDER_BATCH")
	for _, v := range vs {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", v.ID, cell(v.SourceID), v.Generation, v.State,
			cell(string(v.Outcome)), v.Members, v.Requests, v.Tokens, v.Stored, v.Parked, v.Requeued, tableTime(v.OpenedAt), cell(v.ProviderBatchID))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range vs {
		if v.Outcome != "" && v.Outcome != view.OutcomeCompleted {
			fmt.Fprintf(w, "batch %d %s\n", v.ID, cell(v.Ended()))
		}
		if v.CancelRequestedAt != nil && v.SettledAt == nil && v.State != view.Cancelled {
			fmt.Fprintf(w, "batch %d %s: cancel requested at %s\n", v.ID, v.State, tableTime(*v.CancelRequestedAt))
		}
		if v.LastError != "" {
			fmt.Fprintf(w, "batch %d %s: %s\n", v.ID, v.State, cell(v.LastError))
		}
	}
	return nil
}

func runBatchesShow(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "batches show", &c, false)
	pos, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("batches show takes one batch ID (see sluice batches ls), got %q", pos)
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id < 1 {
		return usageErr("batches show %q: a batch ID is a positive number (see sluice batches ls)", pos[0])
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	v, counts, err := view.Show(ctx, pool, id)
	if errors.Is(err, view.ErrUnknownBatch) {
		return fmt.Errorf("bulk batch %d not found: list ids with sluice batches ls", id)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, batchDetail{BatchView: v, Members: counts})
	}
	return printBatch(env.Stdout, v, counts)
}

// printBatch prints one batch's fields, then its members by state and
// error class.
func printBatch(w io.Writer, v view.BatchView, counts []view.MemberCount) error {
	n := func(i int64) string { return strconv.FormatInt(i, 10) }
	tw := newTable(w)
	for _, r := range [][2]string{
		{"batch_id", n(v.ID)}, {"source_id", cell(v.SourceID)}, {"generation", strconv.Itoa(v.Generation)},
		{"state", string(v.State)}, {"outcome", cell(v.Ended())}, {"error_code", cell(v.ErrorCode)}, {"error_message", cell(v.ErrorMessage)},
		{"input_file_id", cell(v.InputFileID)}, {"provider_batch_id", cell(v.ProviderBatchID)},
		{"output_file_id", cell(v.OutputFileID)}, {"error_file_id", cell(v.ErrorFileID)},
		{"members", strconv.Itoa(v.Members)}, {"requests", strconv.Itoa(v.Requests)}, {"inputs", strconv.Itoa(v.Inputs)}, {"bytes", n(v.Bytes)}, {"tokens", n(v.Tokens)},
		{"stored", strconv.Itoa(v.Stored)}, {"parked", strconv.Itoa(v.Parked)}, {"requeued", strconv.Itoa(v.Requeued)},
		{"answered", strconv.Itoa(v.Answered)}, {"unanswered", strconv.Itoa(v.Unanswered)},
		{"opened_at", tableTime(v.OpenedAt)}, {"sealed_at", tableTimePtr(v.SealedAt)}, {"uploaded_at", tableTimePtr(v.UploadedAt)},
		{"created_at", tableTimePtr(v.CreatedAt)}, {"finished_at", tableTimePtr(v.FinishedAt)}, {"settled_at", tableTimePtr(v.SettledAt)},
		{"cancel_requested_at", tableTimePtr(v.CancelRequestedAt)}, {"updated_at", tableTime(v.UpdatedAt)},
		{"last_error", cell(v.LastError)},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	fmt.Fprintln(tw, "\nMEMBERS\tERROR_CLASS\tCOUNT")
	for _, m := range counts {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", m.State, cell(m.ErrorClass), m.Members)
	}
	return tw.Flush()
}
