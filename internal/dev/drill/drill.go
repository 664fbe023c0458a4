package drill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/ingest/producer"
)

// DefaultSource is Config.Source's default.
const DefaultSource = "sluice-drill"

// DefaultTimeout is Config.Timeout's default: long enough for three
// retries under the default backoff (ceilings 1s, 2s, 4s) on a busy
// system.
const DefaultTimeout = 90 * time.Second

// Config configures a drill.
type Config struct {
	// EmbedderURL is embed-sim's address, as the services have it
	// (EMBEDDER_URL); a trailing /v1 is ignored. Required.
	EmbedderURL string
	// Source is the source_id the drill's documents are ingested under.
	// Defaults to DefaultSource.
	Source string
	// Timeout bounds the wait for each document's outcome. Defaults to
	// DefaultTimeout.
	Timeout time.Duration
	// HTTPClient talks to embed-sim. Defaults to a client with a 10s
	// timeout.
	HTTPClient *http.Client
}

func (c *Config) applyDefaults() {
	if c.Source == "" {
		c.Source = DefaultSource
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
}

// Validate says how to fix a configuration.
func (c Config) Validate() error {
	if c.EmbedderURL == "" {
		return errors.New("no embedder URL: set EMBEDDER_URL (or --embedder-url) to the running embed-sim")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout %s: want a positive duration", c.Timeout)
	}
	return nil
}

// Run runs the drill and returns its report; Report.Passed says whether
// every check passed. An error means the drill could not run at all
// (database, NATS or embed-sim unreachable).
func Run(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, cfg Config) (*Report, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sim := newSimClient(cfg.EmbedderURL, cfg.HTTPClient)
	before, err := sim.requestsByCode(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-drill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	runTag := time.Now().UTC().Format("20060102T150405.000000000Z")
	rep := &Report{Source: cfg.Source}
	for _, c := range cases() {
		r := runCase(ctx, pool, js, sim, cfg, dir, runTag, c)
		rep.Cases = append(rep.Cases, r)
	}
	after, err := sim.requestsByCode(ctx)
	if err != nil {
		return nil, err
	}
	rep.Metrics = checkMetrics(before, after)
	return rep, nil
}

// ingest writes one document, runs the producer over it and returns the
// producer's run id.
func ingest(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, source, dir, name, text string) (string, error) {
	sub := filepath.Join(dir, name)
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(sub, name+".txt"), []byte(text), 0o600); err != nil {
		return "", err
	}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{sub}})
	if err != nil {
		return "", err
	}
	p, err := producer.New(producer.Config{SourceID: source}, pool, js, zerolog.Nop())
	if err != nil {
		return "", err
	}
	sum, err := p.Run(ctx, r)
	if err != nil {
		return "", fmt.Errorf("ingest %s: %w", name, err)
	}
	if sum.Chunks != 1 {
		return "", fmt.Errorf("ingest %s: published %d chunks, want 1", name, sum.Chunks)
	}
	return sum.RunID, nil
}
