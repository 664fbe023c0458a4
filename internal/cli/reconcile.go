package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/reconcile"
)

func runReconcile(ctx context.Context, env Env, args []string) error {
	var c conn
	var redrive bool
	var staleAfter time.Duration
	l := newLoader(env, "reconcile", &c, true)
	l.Bool(&redrive, "redrive", "", false, "re-publish stale pending chunks from PostgreSQL (recreating INGEST if it is gone)")
	l.Duration(&staleAfter, "stale-after", "", 15*time.Minute, "a pending chunk older than this counts as stale even when its source still has messages in INGEST")
	if _, err := parse(l, args); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, js, err := broker.Connect(broker.ConnConfig{URL: c.NATSURL, Name: "sluice-reconcile"}, zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	rep, err := reconcile.Run(ctx, pool, js, staleAfter, redrive)
	if err != nil {
		return err
	}
	if c.JSON {
		_ = printJSON(env.Stdout, rep)
	} else {
		printReconcile(env, rep)
	}
	if !rep.OK {
		return &ExitError{Code: 1, Err: errors.New("reconcile found leaked, duplicated or stale chunks")}
	}
	return nil
}

func printReconcile(env Env, r *reconcile.Report) {
	w := env.Stdout
	fmt.Fprintf(w, "chunks: %d stored, %d parked, %d pending, %d superseded\n",
		r.Chunks["stored"], r.Chunks["parked"], r.Chunks["pending"], r.Chunks["superseded"])
	fmt.Fprintf(w, "leaked: %d (stored without vector %d, parked without dead letter %d)\n",
		r.Leaked.Total(), r.Leaked.StoredWithoutVector, r.Leaked.ParkedWithoutDeadLetter)
	fmt.Fprintf(w, "duplicated: %d\n", r.Duplicated)
	fmt.Fprintf(w, "stale pending: %d (redriven %d)\n", r.StalePending, r.Redriven)
	if r.OK {
		fmt.Fprintln(w, "OK: every chunk is stored, parked, or owed and queued")
	}
}
