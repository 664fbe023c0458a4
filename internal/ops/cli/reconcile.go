package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Exit statuses of `sluice reconcile`, so that a scheduled check tells a
// leak from a system it could not look at.
const (
	// reconcileProblems: the check ran and found leaked, duplicated,
	// unpublished, lost or stranded chunks (or, with --redrive, a repair
	// failed).
	reconcileProblems = 1
	// reconcileUnchecked: the check could not run to its end — PostgreSQL
	// or JetStream did not answer, JetStream did not settle within
	// --settle-timeout, or the command line was wrong. Nothing is known
	// about leaks; run it again.
	reconcileUnchecked = 2
)

// reconcileExitHelp is printed below the flags of `sluice reconcile --help`.
const reconcileExitHelp = `
Exit status:
  0  every chunk is stored, parked, or owed and queued (with --redrive: every problem found was repaired)
  1  problems found: leaked, duplicated, unpublished, lost or stranded chunks, a deleted document
     with data left in any index generation, not exactly one active generation, a stream the broker
     lost (run sluice nats setup as the topology owner, then --redrive), or a failed repair
  2  could not check: PostgreSQL or JetStream did not answer or refused the settings (the message
     names the setting to fix), JetStream did not settle within --settle-timeout (a cluster electing
     its leaders), or a usage error; nothing is known, run it again
`

func runReconcile(ctx context.Context, env Env, args []string) error {
	var c conn
	var doRedrive bool
	var grace time.Duration
	var provider batchapi.Config
	var tableSource string
	l := newLoader(env, "reconcile", &c, true)
	l.String(&tableSource, "table-source", "", "", "instead: compare the declared table source's rows (those its filter takes) with its documents, saying what is missing and extra")
	l.Bool(&doRedrive, "redrive", "", false, "repair what is found from PostgreSQL: re-publish owed, lost and stranded chunks (recreating INGEST if it is gone), re-open leaked ones, resolve open dead letters of stored chunks")
	l.Duration(&grace, "grace", "OWED_GRACE", publish.DefaultGrace, "how long a recorded chunk may wait for its producer's publish before it counts as unpublished")
	l.String(&provider.URL, "embedder-url", "EMBEDDER_URL", "",
		"the provider's API, to list the bulk request files Sluice uploaded that no batch uses (--redrive deletes them); unset: the provider is not looked at")
	l.String(&provider.APIKey, "embedder-api-key", "EMBEDDER_API_KEY", "", "API key, sent as a bearer token")
	l.FlagSet().Usage = func() {
		l.PrintUsage(env.Stderr)
		fmt.Fprint(env.Stderr, reconcileExitHelp)
	}
	if _, err := parse(l, args); err != nil {
		return err
	}
	if tableSource != "" {
		return reconcileTable(ctx, env, &c, tableSource)
	}
	opts := reconcile.Config{Grace: grace, Redrive: doRedrive}
	if provider.URL != "" {
		client, err := batchapi.New(provider)
		if err != nil {
			return usageErr("%v", err)
		}
		opts.Provider = client
	}
	rep, err := reconcileOnce(ctx, &c, opts)
	if err != nil {
		var exit *ExitError
		switch {
		case errors.Is(err, ErrUsage) || errors.As(err, &exit):
			return err
		case errors.Is(err, broker.ErrTopologyMissing):
			// A stream that is gone is a finding, not a failure to look:
			// the broker lost the work it held.
			return &ExitError{Code: reconcileProblems, Err: fmt.Errorf("reconcile found problems: %w", err)}
		}
		// A setting that names the wrong server, or credentials it
		// refuses, is said as such: no later run can check either.
		return &ExitError{Code: reconcileUnchecked, Err: fmt.Errorf("reconcile could not check: %w", c.Fault("sluice", err, true))}
	}
	if c.JSON {
		_ = printJSON(env.Stdout, rep)
	} else {
		printReconcile(env, rep)
	}
	if !rep.OK {
		return &ExitError{Code: reconcileProblems, Err: fmt.Errorf("reconcile found problems: %s", strings.Join(rep.Named(), ", "))}
	}
	return nil
}

// reconcileOnce connects to PostgreSQL and NATS and runs one check. Its
// JetStream reads wait through a settling cluster for up to the
// command's --settle-timeout each.
func reconcileOnce(ctx context.Context, c *conn, opts reconcile.Config) (*reconcile.Report, error) {
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	nc, js, err := c.connectNATS("sluice-reconcile", zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return reconcile.Run(ctx, pool, js, opts)
}

func printReconcile(env Env, r *reconcile.Report) {
	w := env.Stdout
	fmt.Fprintf(w, "chunks: %d stored, %d parked, %d pending, %d superseded\n",
		r.Chunks[string(manifest.Stored)], r.Chunks[string(manifest.Parked)], r.Chunks[string(manifest.Pending)], r.Chunks[string(manifest.Superseded)])
	fmt.Fprintf(w, "leaked: %d (stored without vector %d, parked without dead letter %d)\n",
		r.Leaked.Total(), r.Leaked.StoredWithoutVector, r.Leaked.ParkedWithoutDeadLetter)
	if r.Leaked.NeedReingest > 0 {
		fmt.Fprintf(w, "  of which %d had their job cleared when stored: --redrive marks their documents; then run the producer over their source again\n", r.Leaked.NeedReingest)
	}
	fmt.Fprintf(w, "duplicated: %d\n", r.Duplicated)
	fmt.Fprintf(w, "unpublished (recorded, never confirmed by NATS): %d\n", r.Unpublished)
	fmt.Fprintf(w, "lost (confirmed, but gone from INGEST): %d\n", r.Lost)
	fmt.Fprintf(w, "stranded in INGEST (no durable will deliver them): %d\n", r.Stranded)
	fmt.Fprintf(w, "stored with an open dead letter: %d\n", r.OpenDeadLetters)
	for _, g := range r.Generations {
		fmt.Fprintf(w, "generation %d (%s): %d vectors, %d deleted documents with vectors", g.Generation, g.Status, g.Vectors, g.DeletedWithVectors)
		if p := g.Progress; p != nil {
			fmt.Fprintf(w, "; %d of %d chunks stored, %d owed, %d parked", p.Stored, p.Chunks, p.Owed, p.Parked)
		}
		fmt.Fprintln(w)
	}
	for _, g := range r.BackfillStranded {
		fmt.Fprintf(w, "generation %d: owes chunks stored over %s ago that nothing queues or carries (--redrive starts another backfill pass)\n", g, reconcile.StrandedAfter)
	}
	if r.NotOneActive != "" {
		fmt.Fprintf(w, "generations: %s\n", r.NotOneActive)
	}
	if a := r.Active; a != nil {
		fmt.Fprintf(w, "active generation %d: %d chunks owed, %d parked of %d (backfill %s)\n", a.Generation, a.Owed, a.Parked, a.Chunks, a.Backfill)
	}
	if r.ActiveOwes != "" {
		fmt.Fprintf(w, "generations: %s\n", r.ActiveOwes)
	}
	for _, f := range r.BulkOrphanFiles {
		fmt.Fprintf(w, "bulk request file at the provider that no batch uses: %s (--redrive deletes it)\n", f)
	}
	if r.StaleTextClaims > 0 {
		fmt.Fprintf(w, "text claims older than %s: %d (their claimers died and no pipeline has swept them since; --redrive deletes them)\n",
			reconcile.StaleClaimAge, r.StaleTextClaims)
	}
	for _, b := range r.Budgets {
		fmt.Fprintf(w, "fleet budget %s: %d members %v, shares adding up to %.3f of %g requests and %g tokens a minute (0 unlimited)\n",
			b.Key, b.Members, b.Services, b.Shares, b.RequestsPerMinute, b.TokensPerMinute)
	}
	for _, o := range r.Overdrawn {
		fmt.Fprintf(w, "overdrawn: %s\n", o)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Redriven)) {
		fmt.Fprintf(w, "redriven %s: %d\n", k, r.Redriven[k])
	}
	for _, f := range r.Failures {
		fmt.Fprintf(env.Stderr, "repair failed: %s\n", f)
	}
	if r.OK && r.Problems() == 0 {
		fmt.Fprintln(w, "OK: every chunk is stored, parked, or owed and queued")
	} else if r.OK {
		fmt.Fprintln(w, "REPAIRED: every problem found was re-driven; run reconcile again once the system is quiet")
	}
}
