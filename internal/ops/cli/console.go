package cli

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ops/console"
)

func runConsole(ctx context.Context, env Env, args []string) error {
	var c conn
	var cfg console.Config
	var tokenFile string
	l := newLoader(env, "console", &c, true)
	l.String(&cfg.Addr, "addr", "CONSOLE_ADDR", console.DefaultAddr, "listen address (loopback by default; set --tls-cert/--tls-key or put a TLS proxy in front to expose it)")
	l.Bool(&cfg.TrustProxy, "trust-proxy", "CONSOLE_TRUST_PROXY", false, "trust the reverse proxy's X-Forwarded-Proto and X-Forwarded-For (only when every request comes through it)")
	l.String(&cfg.TLSCert, "tls-cert", "CONSOLE_TLS_CERT", "", "serve HTTPS with this certificate (PEM), with --tls-key")
	l.String(&cfg.TLSKey, "tls-key", "CONSOLE_TLS_KEY", "", "the private key (PEM) of --tls-cert")
	l.Duration(&cfg.StatementTimeout, "statement-timeout", "CONSOLE_STATEMENT_TIMEOUT", console.DefaultStatementTimeout, "bound on every PostgreSQL statement the console runs")
	l.String(&tokenFile, "generated-token-file", "CONSOLE_GENERATED_TOKEN_FILE", "",
		"where the operator token generated when no token is set is kept (default: "+console.GeneratedTokenName+" in the user's config directory)")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("console", rest); err != nil {
		return err
	}
	if cfg.Tokens, err = console.LoadTokens(lookupOrNone(env)); err != nil {
		return usageErr("%v", err)
	}
	kept, created := "", false
	if len(cfg.Tokens) == 0 {
		// Secure by default: never open; a generated operator token
		// instead, kept in a file the operator reads and never printed.
		var t console.Token
		if t, kept, created, err = console.GeneratedToken(tokenFile); err != nil {
			return usageErr("%v", err)
		}
		cfg.Tokens = []console.Token{t}
	}
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
	defer srv.Close()
	printConsoleSignIn(env, cfg, kept, created)
	return srv.ListenAndServe(ctx)
}

// printConsoleSignIn says where the console listens and, when its operator
// token was generated, which file holds it.
func printConsoleSignIn(env Env, cfg console.Config, kept string, created bool) {
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	switch {
	case created:
		fmt.Fprintf(env.Stdout, "no CONSOLE_*_TOKEN set: generated an operator token and kept it in %s (readable by you only).\nsign in at %s://%s/login with the token that file holds\n", kept, scheme, cfg.Addr)
	case kept != "":
		fmt.Fprintf(env.Stdout, "no CONSOLE_*_TOKEN set: the operator token is the one kept in %s.\nsign in at %s://%s/login\n", kept, scheme, cfg.Addr)
	default:
		fmt.Fprintf(env.Stdout, "console on %s://%s/\n", scheme, cfg.Addr)
	}
}
