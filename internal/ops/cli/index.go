package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func indexCommands() map[string]command {
	return map[string]command{
		"ls":       {"list the index generations and which one search serves", runIndexList},
		"create":   {"register a generation: create --model M --dims D [--chunk-size N --chunk-overlap N --chunk-unit U] [--mode batch] --reason R [--execute]", runIndexCreate},
		"status":   {"a generation's progress: stored, owed and parked chunks, its index, and with --cost the tokens left to embed: status G [--cost]", runIndexStatus},
		"activate": {"serve generation G instead of the active one: activate G --reason R [--force] [--execute]", runIndexActivate},
		"drop":     {"remove generation G's vectors: drop G --reason R [--execute]", runIndexDrop},
		"compare":  {compareSummary, runIndexCompare},
		"retry":    {"embed generation G's parked chunks again on its backfill's next pass: retry G --reason R [--execute]", runIndexRetry},
		"build":    {"build generation G's nearest-neighbour index (after its backfill, before activating it): build G --reason R [--execute]", runIndexBuild},
	}
}

func runIndex(ctx context.Context, env Env, args []string) error {
	return subcommand(ctx, env, "index", indexCommands(), args)
}

func runIndexList(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "index ls", &c, false)
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErr("index ls takes no arguments, got %q", rest)
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	gs, err := generation.List(ctx, pool)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, gs)
	}
	tw := newTable(env.Stdout)
	fmt.Fprintln(tw, "GENERATION\tSTATUS\tMODEL\tDIMS\tCHUNKING\tMODE\tCREATED")
	for _, g := range gs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", g.ID, g.Status, cell(modelName(g)), g.Dims, chunking(g), g.Mode,
			g.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return tw.Flush()
}

func modelName(g generation.Generation) string {
	if g.Model == "" {
		return "(EMBEDDER_MODEL)"
	}
	return g.Model
}

func chunking(g generation.Generation) string {
	if g.Chunking == nil {
		return "(the producer's)"
	}
	s := fmt.Sprintf("%d/%d %s", g.Chunking.Size, g.Chunking.Overlap, g.Chunking.Unit)
	if g.Recut {
		s += " (recut)"
	}
	return s
}

func runIndexCreate(ctx context.Context, env Env, args []string) error {
	var c conn
	var s generation.Spec
	var r generation.Request
	l := newLoader(env, "index create", &c, false)
	l.String(&s.Model, "model", "", "", "the provider model that embeds the generation's chunks and queries (required)")
	l.Int(&s.Dims, "dims", "", 0, "the model's output dimension (required)")
	l.Int(&s.Chunking.Size, "chunk-size", "CHUNK_SIZE", chunk.DefaultSize, "largest chunk, in --chunk-unit, as the producer's --chunk-size")
	l.Int(&s.Chunking.Overlap, "chunk-overlap", "CHUNK_OVERLAP", chunk.DefaultOverlap, "overlap between consecutive chunks, as the producer's --chunk-overlap")
	l.String(&s.Chunking.Unit, "chunk-unit", "CHUNK_UNIT", string(chunk.DefaultUnit), "chunk size unit, tokens or chars, as the producer's --chunk-unit")
	l.String(&s.Mode, "mode", "", policy.ModeLive, "how the backfill embeds: live (the live endpoint) or batch (the provider's Batch API: half the price, outside the live rate limits, within hours)")
	registerChange(l, &r, false)
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErr("index create takes no arguments, got %q: give the generation with --model and --dims", rest)
	}
	if err := s.Validate(); err != nil {
		return usageErr("index create: %v", err)
	}
	if r.Reason == "" {
		return usageErr("index create needs --reason: %v", generation.ErrNoReason)
	}
	cur, err := producerChunking(env)
	if err != nil {
		return usageErr("index create: %v", err)
	}
	// Another chunking cuts other chunks than those generation 1 holds
	// the text of: the sources' runs cut them.
	s.Recut = s.Chunking != cur
	return change(ctx, env, c, &r, func(reg *generation.Registry) (generation.Change, error) { return reg.Create(ctx, s, r) })
}

// producerChunking is the chunking the producer cuts with, from the
// environment it shares with the CLI, or chunk's defaults.
func producerChunking(env Env) (generation.Chunking, error) {
	c := generation.Chunking{Size: chunk.DefaultSize, Overlap: chunk.DefaultOverlap, Unit: string(chunk.DefaultUnit)}
	if env.Lookup == nil {
		return c, nil
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"CHUNK_SIZE", &c.Size}, {"CHUNK_OVERLAP", &c.Overlap}} {
		raw, ok := env.Lookup(v.name)
		if !ok || raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			return c, fmt.Errorf("%s=%q is not a number", v.name, raw)
		}
		*v.dst = n
	}
	if raw, ok := env.Lookup("CHUNK_UNIT"); ok && raw != "" {
		c.Unit = raw
	}
	return c, nil
}

func runIndexStatus(ctx context.Context, env Env, args []string) error {
	var c conn
	var withCost bool
	l := newLoader(env, "index status", &c, false)
	l.Bool(&withCost, "cost", "", false, "count the tokens of the chunks a later generation still owes (reads the text of every one)")
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	id, err := generationArg("status", rest)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := loadIndexStatus(ctx, pool, id, withCost)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, st)
	}
	printIndexStatus(env.Stdout, st)
	return nil
}

// indexStatus is what `sluice index status` shows of one generation.
type indexStatus struct {
	generation.Generation
	Progress generation.Progress `json:"progress"`
	Index    *string             `json:"index"`
	Cost     *generation.Cost    `json:"cost,omitempty"`
}

// loadIndexStatus reads generation id's status, and with withCost what
// finishing it costs.
func loadIndexStatus(ctx context.Context, pool *pgxpool.Pool, id int, withCost bool) (indexStatus, error) {
	g, err := generation.Get(ctx, pool, id)
	if err != nil {
		return indexStatus{}, err
	}
	st := indexStatus{Generation: g}
	if st.Progress, err = generation.ProgressOf(ctx, pool, g); err != nil {
		return indexStatus{}, err
	}
	if st.Index, err = indexState(ctx, pool, g); err != nil {
		return indexStatus{}, err
	}
	if withCost && g.ID != generation.First && g.Status != generation.Dropped {
		k, err := generation.CostToFinish(ctx, pool, g)
		if err != nil {
			return indexStatus{}, err
		}
		st.Cost = &k
	}
	return st, nil
}

// printIndexStatus writes st for a person.
func printIndexStatus(w io.Writer, st indexStatus) {
	g, p := st.Generation, st.Progress
	later := g.ID != generation.First && g.Status != generation.Dropped
	fmt.Fprintf(w, "generation %d: %s, model %s, %d dims, chunking %s, embedded %s\n", g.ID, g.Status, modelName(g), g.Dims, chunking(g), g.Mode)
	fmt.Fprintf(w, "  %d of %d chunks stored (%.1f%%), %d owed, %d parked; %d vectors held\n",
		p.Stored, p.Chunks, p.Percent, p.Owed, p.Parked, p.Vectors)
	if p.ParkedHere > 0 {
		fmt.Fprintf(w, "  of the parked, %d in this generation alone\n", p.ParkedHere)
	}
	if p.Uncut > 0 {
		fmt.Fprintf(w, "  %d documents not cut for it yet: run their sources' producers again\n", p.Uncut)
	}
	printBackfill(w, p)
	if later && p.Owed > 0 {
		if p.ETASeconds != nil {
			fmt.Fprintf(w, "  rate: %.1f chunks/s over the last %s; about %s to finish\n", p.RecentPerSecond, generation.ETAWindow, time.Duration(*p.ETASeconds*float64(time.Second)).Round(time.Second))
		} else {
			fmt.Fprintf(w, "  rate: nothing written in the last %s; is a consumer running?\n", generation.ETAWindow)
		}
	}
	if p.ParkedHere > 0 && g.ID != generation.First {
		fmt.Fprintf(w, "  parked: see why with sluice index status %d --json; retry with sluice index retry %d --reason R --execute\n", g.ID, g.ID)
	}
	switch {
	case st.Index != nil:
		fmt.Fprintf(w, "  nearest-neighbour index: %s\n", *st.Index)
	case later:
		fmt.Fprintf(w, "  nearest-neighbour index: none; searches scan every vector (sluice index build %d)\n", g.ID)
	}
	if st.Cost != nil {
		printCost(w, *st.Cost)
	}
}

// printBackfill writes the line on a generation's backfill.
func printBackfill(w io.Writer, p generation.Progress) {
	fmt.Fprintf(w, "  backfill: %s", p.Backfill)
	if st := p.State; st != nil {
		fmt.Fprintf(w, "; pass %d", st.Pass)
		if st.Scanned {
			fmt.Fprint(w, " scanned")
		}
		fmt.Fprintf(w, ", %d planned, %d queued to publish", st.Planned, st.Queued)
	}
	fmt.Fprintln(w)
}

func printCost(w io.Writer, k generation.Cost) {
	how := k.Encoding
	if !k.Exact {
		how += ", an estimate"
	}
	fmt.Fprintf(w, "  cost to finish: %d tokens (%s) for the %d owed chunks whose text is held", k.Tokens, how, k.Counted)
	if k.Unheld > 0 {
		fmt.Fprintf(w, "; %d more owed, whose text it does not hold, not counted", k.Unheld)
	}
	fmt.Fprintln(w)
}

// indexState is the name of g's nearest-neighbour index, nil when it has
// none.
func indexState(ctx context.Context, pool *pgxpool.Pool, g generation.Generation) (*string, error) {
	ok, err := vectorstore.HasGenerationIndex(ctx, pool, g.ID)
	if err != nil || !ok {
		return nil, err
	}
	name := vectorstore.HNSWIndex
	if g.ID != generation.First {
		name = vectorstore.GenerationIndex(g.ID)
	}
	return &name, nil
}

func runIndexRetry(ctx context.Context, env Env, args []string) error {
	return runIndexChange(ctx, env, "retry", false, args, func(reg *generation.Registry, id int, r generation.Request) (generation.Change, error) {
		return reg.Retry(ctx, id, r)
	})
}

func runIndexActivate(ctx context.Context, env Env, args []string) error {
	return runIndexChange(ctx, env, "activate", true, args, func(reg *generation.Registry, id int, r generation.Request) (generation.Change, error) {
		return reg.Activate(ctx, id, r)
	})
}

func runIndexBuild(ctx context.Context, env Env, args []string) error {
	return runIndexChange(ctx, env, "build", false, args, func(reg *generation.Registry, id int, r generation.Request) (generation.Change, error) {
		return reg.Build(ctx, id, r)
	})
}

func runIndexDrop(ctx context.Context, env Env, args []string) error {
	return runIndexChange(ctx, env, "drop", false, args, func(reg *generation.Registry, id int, r generation.Request) (generation.Change, error) {
		return reg.Drop(ctx, id, r)
	})
}

// runIndexChange runs `sluice index NAME G`, a change of one generation.
func runIndexChange(ctx context.Context, env Env, name string, force bool, args []string,
	do func(*generation.Registry, int, generation.Request) (generation.Change, error)) error {
	var c conn
	var r generation.Request
	l := newLoader(env, "index "+name, &c, false)
	registerChange(l, &r, force)
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	id, err := generationArg(name, rest)
	if err != nil {
		return err
	}
	if r.Reason == "" {
		return usageErr("index %s needs --reason: %v", name, generation.ErrNoReason)
	}
	return change(ctx, env, c, &r, func(reg *generation.Registry) (generation.Change, error) { return do(reg, id, r) })
}

// registerChange registers the flags every audited change takes.
func registerChange(l *config.Loader, r *generation.Request, force bool) {
	l.String(&r.Reason, "reason", "", "", "why (required; recorded in the audit, dry runs too)")
	l.Bool(&r.Execute, "execute", "", false, "make the change; without it the command is an audited dry run")
	if force {
		l.Bool(&r.Force, "force", "", false, "activate although the generation still owes or has parked chunks, or nothing keeps it current")
	}
}

// generationArg reads the one generation number a command takes.
func generationArg(cmd string, rest []string) (int, error) {
	if len(rest) != 1 {
		return 0, usageErr("index %s takes one generation number (see sluice index ls), got %q", cmd, rest)
	}
	id, err := strconv.Atoi(rest[0])
	if err != nil || id < 1 {
		return 0, usageErr("index %s: %q is not a generation number: give one from sluice index ls, such as 2", cmd, rest[0])
	}
	return id, nil
}

// change runs one audited change and prints what it did.
func change(ctx context.Context, env Env, c conn, r *generation.Request, do func(*generation.Registry) (generation.Change, error)) error {
	r.By = cliPrincipal(env)
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	ch, err := do(generation.New(pool))
	if errors.Is(err, generation.ErrIncomplete) || errors.Is(err, generation.ErrUnknown) {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, ch)
	}
	printChange(env, ch)
	return nil
}

func printChange(env Env, ch generation.Change) {
	var would, did string
	switch ch.Action {
	case generation.ActionCreate:
		would = fmt.Sprintf("create generation %d", ch.Generation)
		did = fmt.Sprintf("created generation %d, building: the consumers' backfill embeds every stored chunk into it (follow with sluice index status %d)", ch.Generation, ch.Generation)
		if ch.Recut {
			would += ", recut: its chunking differs from the producer's (CHUNK_SIZE, CHUNK_OVERLAP, CHUNK_UNIT)"
			did = fmt.Sprintf("created generation %d, building, recut: its chunking differs from the producer's, so each source's next run cuts every document it reads for it too, "+
				"and the consumers' backfill embeds those chunks; run every source's producer again (sluice index status %d counts the documents not cut yet)", ch.Generation, ch.Generation)
		}
	case generation.ActionActivate:
		would = fmt.Sprintf("activate generation %d, retiring generation %d", ch.Generation, ch.Previous)
		did = fmt.Sprintf("activated generation %d: search serves it; generation %d is retired (activate it to roll back)", ch.Generation, ch.Previous)
		if ch.Forced {
			forced := fmt.Sprintf(" (forced: %d chunks owed, %d parked)", ch.Progress.Owed, ch.Progress.Parked)
			would, did = would+forced, did+forced
		}
	case generation.ActionDrop:
		would = fmt.Sprintf("drop generation %d and its %d vectors", ch.Generation, ch.VectorsDropped)
		did = fmt.Sprintf("dropped generation %d and its %d vectors", ch.Generation, ch.VectorsDropped)
		if ch.Index != "" {
			would, did = would+" and index "+ch.Index, did+" and index "+ch.Index
		}
	case generation.ActionRetry:
		would = fmt.Sprintf("clear generation %d's parked chunks: %d owed again to its backfill", ch.Generation, ch.Retried)
		did = fmt.Sprintf("cleared generation %d's parked chunks: its backfill embeds the %d owed again on its next pass", ch.Generation, ch.Retried)
	case generation.ActionBuild:
		would = fmt.Sprintf("build index %s of generation %d", ch.Index, ch.Generation)
		did = fmt.Sprintf("built index %s: searches of generation %d use it", ch.Index, ch.Generation)
		if ch.IndexExisted {
			would = fmt.Sprintf("build nothing: index %s of generation %d exists", ch.Index, ch.Generation)
			did = fmt.Sprintf("index %s of generation %d exists already; nothing was built", ch.Index, ch.Generation)
		}
	}
	if ch.DryRun {
		fmt.Fprintf(env.Stdout, "DRY RUN (audit %d): nothing was changed; add --execute to %s.\n", ch.AuditID, would)
		return
	}
	fmt.Fprintf(env.Stdout, "%s (audit %d)\n", did, ch.AuditID)
}
