package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/store/generation"
)

// LargerModel is the model the demo migrates to; embed-sim answers any
// model name at any dimension.
const LargerModel = "embed-sim-large"

// compareQueries is how many queries the demo's comparison asks.
const compareQueries = 12

// migration is what the demo's model change did, as the CLI and the
// consumers' metrics tell it.
type migration struct {
	Generation int
	Model      string
	Dims       int
	// Backfilled are the chunks the new generation stored; Took is the
	// time from its creation to ready; Planned the chunks its scan
	// queued over Passes passes.
	Backfilled int64
	Took       time.Duration
	Planned    int64
	Passes     int
	// Inputs, Tokens and Reused are the consumers' counters for the new
	// generation: what the provider embedded, and what it was spared.
	Inputs, Tokens, Reused float64
	// Indexed is whether an HNSW index was built (pgvector only).
	Indexed bool
	// Queries, Overlap and MRR are the comparison of generation 1 with
	// the new one.
	Queries      int
	Overlap, MRR float64
	// Served and RolledBack are the generations search served after the
	// activation and after the rollback.
	Served, RolledBack int
	// Dropped counts the vectors the drop of the rolled-back generation
	// removed: a generation kept after its rollback would go on being
	// backfilled, every new document embedded once per generation.
	Dropped int64
	// Reconcile is reconcile's report once the change is rolled back.
	Reconcile *reconcile.Report
}

// migrate changes the model through the sluice CLI, as an operator does,
// while the consumers backfill the new generation: create it, wait for it
// to be ready, build its index, compare it with generation 1, activate
// it, search, roll back, search again and drop it.
func (s *stack) migrate(ctx context.Context, pool *pgxpool.Pool, corpusDir string) (*migration, error) {
	m := &migration{Model: LargerModel, Dims: 2 * dims}
	s.say("changing the model: generation 2, %s at %d dims, backfilled by the running consumers …", m.Model, m.Dims)
	var created generation.Change
	start := time.Now()
	if err := s.sluiceJSON(&created, "index", "create", "--model", m.Model, "--dims", strconv.Itoa(m.Dims),
		"--reason", "demo: a larger model", "--execute"); err != nil {
		return nil, err
	}
	m.Generation = created.Generation
	p, err := s.awaitReady(ctx, pool, m.Generation, start)
	if err != nil {
		return nil, err
	}
	m.Took, m.Backfilled = time.Since(start), p.Stored
	if p.State != nil {
		m.Planned, m.Passes = p.State.Planned, p.State.Pass
	}
	if err := s.embeddingCounters(m); err != nil {
		return nil, err
	}
	if err := s.compareAndSwitch(ctx, pool, m, corpusDir); err != nil {
		return nil, err
	}
	m.Reconcile, err = s.reconcile(ctx, pool)
	return m, err
}

// awaitReady waits until sluice index ls shows generation gen ready,
// drawing its backfill's progress, for at most the demo's timeout from
// start.
func (s *stack) awaitReady(ctx context.Context, pool *pgxpool.Pool, gen int, start time.Time) (generation.Progress, error) {
	deadline := start.Add(s.o.Timeout)
	lastLog := time.Time{}
	for {
		var gs []generation.Generation
		if err := s.sluiceJSON(&gs, "index", "ls"); err != nil {
			return generation.Progress{}, err
		}
		g, ok := findGeneration(gs, gen)
		if !ok {
			return generation.Progress{}, fmt.Errorf("sluice index ls does not list generation %d", gen)
		}
		p, err := generation.ProgressOf(ctx, pool, g)
		if err != nil {
			return p, err
		}
		line := backfillLine(g, p)
		if s.o.Progress {
			fmt.Fprintf(s.o.Stderr, "\r\033[K%s", line)
		} else if time.Since(lastLog) > 3*time.Second {
			fmt.Fprintln(s.o.Stderr, line)
			lastLog = time.Now()
		}
		if g.Status == generation.Ready {
			if s.o.Progress {
				fmt.Fprintln(s.o.Stderr)
			}
			return p, nil
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("generation %d not ready after %s: %s (logs in %s)", gen, s.o.Timeout, line, s.dir)
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func findGeneration(gs []generation.Generation, id int) (generation.Generation, bool) {
	for _, g := range gs {
		if g.ID == id {
			return g, true
		}
	}
	return generation.Generation{}, false
}

// backfillLine is the progress line of a generation's backfill.
func backfillLine(g generation.Generation, p generation.Progress) string {
	line := fmt.Sprintf("generation %d %s · stored %d of %d (%.0f%%) · owed %d · parked %d",
		g.ID, g.Status, p.Stored, p.Chunks, p.Percent, p.Owed, p.Parked)
	if st := p.State; st != nil {
		line += fmt.Sprintf(" · pass %d · queued %d", st.Pass, st.Queued)
	}
	return line + fmt.Sprintf(" · %.1f chunks/s", p.RecentPerSecond)
}

// embeddingCounters reads what the consumers paid the provider for the
// new generation, and what they reused, from every service's metrics.
func (s *stack) embeddingCounters(m *migration) error {
	label := fmt.Sprintf(`{generation="%d"}`, m.Generation)
	for _, c := range []struct {
		name string
		dst  *float64
	}{
		{"sluice_embedding_provider_inputs_total", &m.Inputs},
		{"sluice_embedding_provider_tokens_total", &m.Tokens},
		{"sluice_embedding_reuse_total", &m.Reused},
	} {
		for _, addr := range s.metrics {
			v, err := scrapeCounter(addr, c.name+label)
			if err != nil {
				return err
			}
			*c.dst += v
		}
	}
	return nil
}

// compareAndSwitch builds the new generation's index where pgvector is
// installed, compares it with generation 1, activates it, searches, rolls
// back, searches again and drops it.
func (s *stack) compareAndSwitch(ctx context.Context, pool *pgxpool.Pool, m *migration, corpusDir string) error {
	gen := strconv.Itoa(m.Generation)
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')`).Scan(&m.Indexed); err != nil {
		return fmt.Errorf("look for pgvector: %w", err)
	}
	if m.Indexed {
		if _, err := s.sluice("index", "build", gen, "--reason", "demo: index the larger model", "--execute"); err != nil {
			return err
		}
	}
	queries, err := writeQueries(corpusDir, filepath.Join(s.dir, "queries.txt"))
	if err != nil {
		return err
	}
	var cmp struct {
		Overall generation.Summary `json:"overall"`
	}
	if err := s.sluiceJSON(&cmp, "index", "compare", "1", gen, "--queries", queries); err != nil {
		return err
	}
	m.Queries, m.Overlap, m.MRR = cmp.Overall.Queries, cmp.Overall.MeanOverlap, cmp.Overall.MRR
	if _, err := s.sluice("index", "activate", gen, "--reason", "demo: serve the larger model", "--execute"); err != nil {
		return err
	}
	if m.Served, err = s.servedGeneration(ctx); err != nil {
		return err
	}
	if _, err := s.sluice("index", "activate", "1", "--reason", "demo: roll back to the first model", "--execute"); err != nil {
		return err
	}
	if m.RolledBack, err = s.servedGeneration(ctx); err != nil {
		return err
	}
	var dropped generation.Change
	if err := s.sluiceJSON(&dropped, "index", "drop", gen, "--reason", "demo: rolled back, not kept up to date", "--execute"); err != nil {
		return err
	}
	m.Dropped = dropped.VectorsDropped
	return nil
}

// servedGeneration searches as a user would and returns the generation
// that answered.
func (s *stack) servedGeneration(ctx context.Context) (int, error) {
	var res struct {
		Generation int        `json:"generation"`
		Hits       []struct{} `json:"hits"`
	}
	if err := s.sluiceJSON(&res, "search", "who regulates the spring meltwater"); err != nil {
		return 0, err
	}
	if len(res.Hits) == 0 {
		return res.Generation, fmt.Errorf("search of generation %d found nothing", res.Generation)
	}
	return res.Generation, nil
}

// writeQueries writes to path the first sentence of each of the first
// compareQueries plain-text documents of the corpus, in name order, one
// a line, and returns path.
func writeQueries(corpusDir, path string) (string, error) {
	var queries []string
	err := filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".txt" || strings.Contains(p, "poison") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if first, _, ok := strings.Cut(string(b), ". "); ok {
			queries = append(queries, strings.TrimSpace(first))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(queries) == 0 {
		return "", errors.New("the corpus has no plain-text document to draw queries from")
	}
	queries = queries[:min(compareQueries, len(queries))]
	return path, os.WriteFile(path, []byte(strings.Join(queries, "\n")+"\n"), 0o644)
}
