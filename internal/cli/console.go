package cli

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/console"
)

func runConsole(ctx context.Context, env Env, args []string) error {
	var c conn
	var addr string
	l := newLoader(env, "console", &c, true)
	l.String(&addr, "addr", "CONSOLE_ADDR", console.DefaultAddr, "listen address (loopback by default; put TLS in front to expose it)")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("console", rest); err != nil {
		return err
	}
	tokens, err := console.LoadTokens(lookupOrNone(env))
	if err != nil {
		return usageErr("%v", err)
	}
	generated := ""
	if len(tokens) == 0 {
		// Secure by default: never open; a one-off operator token instead.
		t := console.Token{Principal: "operator", Role: console.Operator, Secret: console.NewSecret()}
		tokens, generated = []console.Token{t}, t.Secret
	}
	cfg := console.Config{Addr: addr, Tokens: tokens}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	log := zerolog.New(env.Stderr).With().Timestamp().Str("service", "console").Logger()
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, js, err := c.connectNATS("sluice-console", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg.Log = &log
	srv, err := console.New(cfg, pool, js)
	if err != nil {
		return err
	}
	if generated != "" {
		fmt.Fprintf(env.Stderr, "no CONSOLE_*_TOKEN set: generated an operator token for this run.\nopen http://%s/login?token=%s\n", addr, generated)
	} else {
		fmt.Fprintf(env.Stderr, "console on http://%s/\n", addr)
	}
	return srv.ListenAndServe(ctx)
}
