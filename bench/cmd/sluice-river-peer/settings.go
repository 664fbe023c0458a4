package main

import (
	"errors"
	"flag"
	"io"
	"time"

	"github.com/riverqueue/river"
)

// settings are the peer's flags.
type settings struct {
	databaseURL   string
	embedderURL   string
	model         string
	corpus        string
	dims          int
	chunks        int
	workers       int
	maxConns      int
	fetchCooldown time.Duration
	insertBatch   int
}

func parseFlags(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("sluice-river-peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.databaseURL, "database-url", "", "PostgreSQL database migrated by `sluice migrate` (required)")
	fs.StringVar(&s.embedderURL, "embedder-url", "", "OpenAI-compatible API base (required)")
	fs.StringVar(&s.model, "model", "embed-sim-1", "embedding model")
	fs.StringVar(&s.corpus, "corpus", "", "JSONL corpus, one chunk per record (required)")
	fs.IntVar(&s.dims, "dims", 384, "embedding dimension the database was migrated for")
	fs.IntVar(&s.chunks, "chunks", 0, "records to take from the corpus (0: all)")
	fs.IntVar(&s.workers, "workers", 100, "River MaxWorkers of the default queue")
	fs.IntVar(&s.maxConns, "max-conns", 0, "PostgreSQL pool size (0: workers/4, at least 8)")
	fs.DurationVar(&s.fetchCooldown, "fetch-cooldown", river.FetchCooldownDefault, "River FetchCooldown")
	fs.IntVar(&s.insertBatch, "insert-batch", 1000, "jobs per InsertMany call")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if s.databaseURL == "" || s.embedderURL == "" || s.corpus == "" {
		return s, errors.New("--database-url, --embedder-url and --corpus are required")
	}
	if s.workers < 1 || s.insertBatch < 1 || s.dims < 1 {
		return s, errors.New("--workers, --insert-batch and --dims must be at least 1")
	}
	if s.maxConns == 0 {
		s.maxConns = max(8, s.workers/4)
	}
	return s, nil
}
