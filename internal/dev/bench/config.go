package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scenario names, as --only takes them.
const (
	// ScenarioCeilings measures embed-sim, JetStream, PostgreSQL and the
	// guarantees' bookkeeping alone.
	ScenarioCeilings = "ceilings"
	// ScenarioPipeline384 is the clean pipeline at 384 dimensions: the
	// baseline every ratio divides by or into.
	ScenarioPipeline384 = "pipeline-384"
	// ScenarioPipeline768 is the clean pipeline at 768 dimensions.
	ScenarioPipeline768 = "pipeline-768"
	// ScenarioPoison is the 384-dimension pipeline with 5% poison chunks.
	ScenarioPoison = "poison"
	// ScenarioStorm429 is the 384-dimension pipeline while 20% of requests
	// are answered 429 with Retry-After: 1.
	ScenarioStorm429 = "storm-429"
	// ScenarioNaive is the same path done the obvious way: no batching.
	ScenarioNaive = "naive"
	// ScenarioRiver is the same job built on River.
	ScenarioRiver = "river"
	// ScenarioScale is the 384-dimension pipeline at Config.ScaleChunks.
	ScenarioScale = "scale"
	// ScenarioSyncAlways is the 384-dimension pipeline on a nats-server
	// with sync_interval: always.
	ScenarioSyncAlways = "sync-always"
	// ScenarioScaleOut is the 384-dimension pipeline with 1, 2 and 4
	// consumer processes against an embed-sim that takes 100 ms a request:
	// three runs, scale-out-1, scale-out-2 and scale-out-4.
	ScenarioScaleOut = "scale-out"
)

// allScenarios is every scenario, in the order a repetition runs them.
var allScenarios = []string{
	ScenarioCeilings, ScenarioPipeline384, ScenarioPipeline768, ScenarioPoison,
	ScenarioPipelineDocs, ScenarioStorm429, ScenarioSyncAlways, ScenarioNaive, ScenarioRiver, ScenarioScale, ScenarioScaleOut,
	ScenarioLatency, ScenarioSearch, ScenarioQuota, ScenarioReuse, ScenarioMigration, ScenarioBackfillLatency, ScenarioBulk,
	ScenarioBulkReuse, ScenarioExtract,
}

// Config configures a benchmark invocation.
type Config struct {
	// Quick is the smoke mode: small corpus, one repetition, and neither
	// River nor the scale run unless Only names them.
	Quick bool
	// Reps is how many times each scenario runs; throughput is the median.
	// Defaults to 3, or 1 in quick mode.
	Reps int
	// Chunks is the corpus size of every run but the scale run. Defaults to
	// 10,000, or 200 in quick mode.
	Chunks int
	// ScaleChunks is the corpus size of the scale run, and of the stored
	// corpus whose backfill the backfill-latency run's fresh documents
	// meet. Defaults to 100,000, or 2,000 in quick mode.
	ScaleChunks int
	// Scale1M adds the scale-1m run (and the scale run it is compared
	// with) to the selected scenarios. Defaults to false: at 1,000,000
	// chunks it keeps both cores busy for about a quarter of an hour a
	// repetition, and the vector index over as many rows takes tens of
	// minutes more.
	Scale1M bool
	// Scale1MChunks is the corpus size of the scale-1m run. Hidden, to
	// try the run's code path at a size that ends quickly. Defaults to
	// 1,000,000.
	Scale1MChunks int
	// SearchSizes are the row counts the search scenario measures at.
	// Defaults to 100,000 and 1,000,000, or 2,000 in quick mode.
	SearchSizes []int
	// Out is where the JSON results go. Defaults to
	// bench/results/latest.json, relative to the working directory.
	Out string
	// Only lists the scenarios to run. Defaults to every scenario (in quick
	// mode, every one but river and scale).
	Only []string
	// BinDir holds prebuilt producer, consumer, embed-sim and
	// sluice-river-peer binaries. Defaults to building them from source
	// into a temporary directory.
	BinDir string
	// RiverWorkers is the River peer's MaxWorkers. Defaults to 100, the
	// figure River's own examples use.
	RiverWorkers int
	// Seed makes the corpus and embed-sim's fault draws reproducible.
	// Defaults to 1.
	Seed uint64
	// RiverFetchCooldown is the River peer's FetchCooldown. Defaults to
	// 10ms: River's own default of 100ms caps a queue at one fetch per
	// 100ms and left the peer at half its throughput here, and a peer is
	// only worth comparing against when it is tuned.
	RiverFetchCooldown time.Duration
	// RiverArgs are extra flags for the River peer, such as
	// "--fetch-cooldown 5ms", to see how sensitive the comparison is to
	// River's tuning. Hidden, like ProfileDir. Defaults to none: River's
	// own defaults.
	RiverArgs []string
	// ProfileDir, when set, runs the pipeline's consumers under a CPU and
	// allocation profiler and writes the profiles there. Hidden: profiling
	// slows the consumers, so its runs are not comparable to others.
	ProfileDir string
}

const (
	defaultReps         = 3
	defaultChunks       = 10_000
	defaultScaleChunks  = 100_000
	quickChunks         = 200
	quickScaleChunks    = 2_000
	defaultOut          = "bench/results/latest.json"
	defaultRiverWorkers = 100
	quickSearchRows     = 2_000

	defaultRiverFetchCooldown = 10 * time.Millisecond
)

// defaultSearchSizes is Config.SearchSizes' default.
var defaultSearchSizes = []int{100_000, 1_000_000}

// applyDefaults fills c's zero fields.
func (c *Config) applyDefaults() {
	if c.Reps == 0 {
		c.Reps = defaultReps
		if c.Quick {
			c.Reps = 1
		}
	}
	if c.Chunks == 0 {
		c.Chunks = defaultChunks
		if c.Quick {
			c.Chunks = quickChunks
		}
	}
	if c.ScaleChunks == 0 {
		c.ScaleChunks = defaultScaleChunks
		if c.Quick {
			c.ScaleChunks = quickScaleChunks
		}
	}
	if c.Scale1MChunks == 0 {
		c.Scale1MChunks = defaultScale1MChunks
	}
	if len(c.SearchSizes) == 0 {
		c.SearchSizes = defaultSearchSizes
		if c.Quick {
			c.SearchSizes = []int{quickSearchRows}
		}
	}
	if c.Out == "" {
		c.Out = defaultOut
	}
	if len(c.Only) == 0 {
		for _, s := range allScenarios {
			if c.Quick && (s == ScenarioRiver || s == ScenarioScale) {
				continue
			}
			c.Only = append(c.Only, s)
		}
	}
	c.Only = withScale1M(c.Only, c.Scale1M)
	if c.RiverWorkers == 0 {
		c.RiverWorkers = defaultRiverWorkers
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.RiverFetchCooldown == 0 {
		c.RiverFetchCooldown = defaultRiverFetchCooldown
	}
}

// Validate reports every problem with c, after defaults, saying how to fix
// it.
func (c Config) Validate() error {
	c.applyDefaults()
	var errs []error
	if c.Reps < 1 {
		errs = append(errs, fmt.Errorf("--reps %d: use at least 1 (3 or more for a median that means something)", c.Reps))
	}
	if c.Chunks < 1 || c.ScaleChunks < 1 || c.Scale1MChunks < 1 {
		errs = append(errs, errors.New("--chunks, --scale-chunks and --scale-1m-chunks must be at least 1"))
	}
	for _, n := range c.SearchSizes {
		if n < searchCount {
			errs = append(errs, fmt.Errorf("--search-sizes %d: use at least %d rows, one per timed search", n, searchCount))
		}
	}
	if c.RiverWorkers < 1 || c.RiverFetchCooldown < time.Millisecond {
		errs = append(errs, fmt.Errorf("--river-workers %d, --river-fetch-cooldown %s: use at least 1 and 1ms", c.RiverWorkers, c.RiverFetchCooldown))
	}
	for _, s := range c.Only {
		if !slices.Contains(allScenarios, s) && !slices.Contains(optInScenarios, s) {
			errs = append(errs, fmt.Errorf("--only: unknown scenario %q; known: %s", s, strings.Join(slices.Concat(allScenarios, optInScenarios), ", ")))
		}
	}
	return errors.Join(errs...)
}

// selected reports whether scenario s runs.
func (c Config) selected(s string) bool { return slices.Contains(c.Only, s) }

// ParseFlags reads the command line into a Config. Usage mistakes come back
// wrapped around ErrUsage.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	var c Config
	var only string
	fs := flag.NewFlagSet("sluice-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&c.Quick, "quick", false, "smoke mode: 200 chunks, 1 repetition, no River or scale run unless --only names them")
	fs.IntVar(&c.Reps, "reps", 0, "repetitions per scenario; chunks/s is their median (default 3, quick 1)")
	fs.IntVar(&c.Chunks, "chunks", 0, "chunks per run (default 10000, quick 200)")
	fs.IntVar(&c.ScaleChunks, "scale-chunks", 0, "chunks in the scale run and stored under the backfill-latency run (default 100000, quick 2000)")
	fs.BoolVar(&c.Scale1M, "scale-1m", false, "add the scale-1m run: 1,000,000 chunks, compared with the scale run (about 15 minutes of both cores a repetition, and tens of minutes for its vector index)")
	fs.IntVar(&c.Scale1MChunks, "scale-1m-chunks", 0, "") // hidden: see Config.Scale1MChunks
	fs.Func("search-sizes", "comma-separated row counts the search scenario measures at (default 100000,1000000, quick 2000)", func(v string) error {
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("%q is not a row count", f)
			}
			c.SearchSizes = append(c.SearchSizes, n)
		}
		return nil
	})
	fs.StringVar(&c.Out, "out", defaultOut, "JSON results file")
	fs.StringVar(&only, "only", "", "comma-separated scenarios: "+strings.Join(allScenarios, ","))
	fs.StringVar(&c.BinDir, "bin-dir", "", "directory of prebuilt producer, consumer, embed-sim, sluice-river-peer (default: build them)")
	fs.IntVar(&c.RiverWorkers, "river-workers", defaultRiverWorkers, "River MaxWorkers in the peer")
	fs.DurationVar(&c.RiverFetchCooldown, "river-fetch-cooldown", defaultRiverFetchCooldown, "River FetchCooldown in the peer")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the corpus and of embed-sim's fault draws")
	fs.StringVar(&c.ProfileDir, "profile-dir", "", "") // hidden: see Config.ProfileDir
	fs.Func("river-args", "", func(v string) error {   // hidden: see Config.RiverArgs
		c.RiverArgs = append(c.RiverArgs, strings.Fields(v)...)
		return nil
	})
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	for s := range strings.SplitSeq(only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Only = append(c.Only, s)
		}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	c.applyDefaults()
	return c, nil
}

// ErrUsage marks a command-line mistake.
var ErrUsage = errors.New("usage")

// usage prints the flags that have a usage text; an empty one hides a flag
// meant for diagnosis rather than for routine runs.
func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintln(out, "usage: sluice-bench [flags]")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return
		}
		fmt.Fprintf(out, "  --%s\n    \t%s", f.Name, f.Usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(out, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(out)
	})
}
