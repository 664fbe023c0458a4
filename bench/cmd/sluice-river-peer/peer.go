package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// output is what the peer prints; sluice-bench reads the same fields.
type output struct {
	Chunks    int     `json:"chunks"`
	Seconds   float64 `json:"seconds"`
	Stored    int     `json:"stored"`
	Discarded int     `json:"discarded"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
}

// source is the source id of the benchmark corpus, as the producer uses it.
const source = "bench"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	jobs, err := readJobs(s.corpus, s.chunks)
	if err != nil {
		return err
	}
	pcfg, err := pgxpool.ParseConfig(s.databaseURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = int32(s.maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := newClient(ctx, s, pool, stderr)
	if err != nil {
		return err
	}
	// Workers run while jobs are inserted, as Sluice's consumers run while
	// the producer publishes; the clock starts with the first insert.
	if err := client.Start(ctx); err != nil {
		return err
	}
	start := time.Now()
	for lo := 0; lo < len(jobs); lo += s.insertBatch {
		if _, err := client.InsertMany(ctx, jobs[lo:min(lo+s.insertBatch, len(jobs))]); err != nil {
			return errors.Join(fmt.Errorf("insert jobs: %w", err), client.Stop(context.WithoutCancel(ctx)))
		}
	}
	out, err := waitFinished(ctx, pool, len(jobs), start)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := errors.Join(err, client.Stop(stopCtx)); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(out)
}

// newClient migrates River's tables and builds a client whose one queue
// runs embedWorker.
func newClient(ctx context.Context, s settings, pool *pgxpool.Pool, stderr io.Writer) (*river.Client[pgx.Tx], error) {
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	store, err := vectorstore.Open(ctx, pool, s.dims)
	if err != nil {
		return nil, err
	}
	emb, err := embedder.NewOpenAI(embedder.Config{URL: s.embedderURL, Model: s.model, Dims: s.dims})
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &embedWorker{emb: emb, store: store, pool: pool})
	return river.NewClient(driver, &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.workers}},
		Workers:       workers,
		MaxAttempts:   5,
		FetchCooldown: s.fetchCooldown,
		Logger:        slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}

// readJobs reads up to n records of the corpus as insert parameters.
func readJobs(path string, n int) ([]river.InsertManyParams, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []river.InsertManyParams
	dec := json.NewDecoder(bufio.NewReaderSize(f, 256<<10))
	for dec.More() && (n == 0 || len(out) < n) {
		var rec struct {
			ID       string          `json:"id"`
			Text     string          `json:"text"`
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", path, err)
		}
		meta, err := messages.CanonicalJSON(rec.Metadata)
		if err != nil {
			return nil, err
		}
		hash, err := messages.ContentHash(rec.Text, meta)
		if err != nil {
			return nil, err
		}
		out = append(out, river.InsertManyParams{Args: chunkArgs{DocID: messages.DocID(source, rec.ID),
			Version: 1, ContentHash: hash, Text: rec.Text, Metadata: meta}})
	}
	if n > 0 && len(out) < n {
		return nil, fmt.Errorf("corpus %s has %d records, %d asked for", path, len(out), n)
	}
	return out, nil
}

// waitFinished polls until every job is finalized, then reads the run's
// figures: the time to the last finalized job, and the latency from a
// job's insert to its vector's write.
func waitFinished(ctx context.Context, pool *pgxpool.Pool, n int, start time.Time) (output, error) {
	out := output{Chunks: n}
	for {
		var done int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state IN ('completed', 'cancelled', 'discarded')`).Scan(&done)
		if err != nil {
			return out, err
		}
		if done >= n {
			break
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	var end time.Time
	err := pool.QueryRow(ctx, `
		SELECT max(finalized_at), count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state <> 'completed')
		FROM river_job`).Scan(&end, &out.Stored, &out.Discarded)
	if err != nil {
		return out, err
	}
	out.Seconds = end.Sub(start).Seconds()
	err = pool.QueryRow(ctx, `
		SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), 0), coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), 0)
		FROM (SELECT extract(epoch FROM ce.updated_at - j.created_at) * 1000 AS ms
		      FROM river_job j JOIN chunk_embeddings ce
		        ON ce.doc_id = j.args->>'doc_id' AND ce.chunk_index = (j.args->>'chunk_index')::int
		      WHERE j.state = 'completed') t`).Scan(&out.P50Ms, &out.P99Ms)
	return out, err
}
