package cli

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/drill"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

func runDrill(ctx context.Context, env Env, args []string) error {
	var c conn
	var cfg drill.Config
	l := newLoader(env, "drill", &c, true)
	l.String(&cfg.EmbedderURL, "embedder-url", "EMBEDDER_URL", embedder.DefaultURL, "the running embed-sim the services embed with")
	l.String(&cfg.Source, "source", "", drill.DefaultSource, "source_id the drill's documents are ingested under")
	l.Duration(&cfg.Timeout, "timeout", "", drill.DefaultTimeout, "how long to wait for each document's outcome")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("drill", rest); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The drill ingests its documents as a producer would: NATS_URL must
	// carry the producer's user.
	nc, js, err := c.connectNATS("sluice-drill", zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	rep, err := drill.Run(ctx, pool, js, cfg)
	if err != nil {
		return err
	}
	if c.JSON {
		_ = printJSON(env.Stdout, struct {
			*drill.Report
			Passed bool `json:"passed"`
		}{rep, rep.Passed()})
	} else {
		rep.Write(env.Stdout)
	}
	if !rep.Passed() {
		return &ExitError{Code: 1, Err: errors.New("the fault drill failed: see the report")}
	}
	return nil
}
