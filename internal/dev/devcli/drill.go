package devcli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/drill"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// runDrill is `sluice-dev drill`: it ingests as the producer does, so
// DATABASE_URL and NATS_URL may carry the producer's or the operator's
// credentials, as long as the NATS user may publish chunk jobs.
func runDrill(ctx context.Context, env Env, args []string) error {
	var c config.Common
	var cfg drill.Config
	var asJSON bool
	l := newLoader(env, "drill")
	config.RegisterDatabase(l, &c)
	config.RegisterNATS(l, &c)
	l.Bool(&asJSON, "json", "", false, "print JSON for machines")
	l.String(&cfg.EmbedderURL, "embedder-url", "EMBEDDER_URL", embedder.DefaultURL, "the running embed-sim the services embed with")
	l.String(&cfg.Source, "source", "", drill.DefaultSource, "source_id the drill's documents are ingested under")
	l.Duration(&cfg.Timeout, "timeout", "", drill.DefaultTimeout, "how long to wait for each document's outcome")
	if err := parse(l, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := c.ValidateNATS(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	pool, err := pgxpool.New(ctx, c.DatabaseURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("connect to postgres %s: %w (set DATABASE_URL)", config.Redact(c.DatabaseURL), err)
	}
	defer pool.Close()
	nc, js, err := broker.Connect(broker.ConnConfigOf(c, "sluice-drill"), zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	rep, err := drill.Run(ctx, pool, js, cfg)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			*drill.Report
			Passed bool `json:"passed"`
		}{rep, rep.Passed()})
	} else {
		rep.Write(env.Stdout)
	}
	if !rep.Passed() {
		return fmt.Errorf("the fault drill %w: see the report", errFailed)
	}
	return nil
}
