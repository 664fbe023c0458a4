package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// RoleEnv names the role a re-executed benchmark binary plays. The naive
// workers and the profiled services are this program run again as a
// separate process, so that each has its own RSS and CPU time.
const RoleEnv = "SLUICE_BENCH_ROLE"

// Roles, as RoleEnv takes them.
const (
	roleNaiveProducer    = "naive-producer"
	roleNaiveConsumer    = "naive-consumer"
	roleProfiledConsumer = "profiled-consumer"
	roleProfiledProducer = "profiled-producer"
)

const (
	// corpusEnv is the JSONL corpus the naive producer reads.
	corpusEnv = "SLUICE_BENCH_CORPUS"
	// profileEnv is the file prefix of a profiled service's profiles.
	profileEnv = "SLUICE_BENCH_PROFILE"
)

// RunChild plays the role named by RoleEnv, if set, and reports the exit
// code; ok is false when the process is not a child. Call it first thing
// in main (and in TestMain of a test that runs the benchmark).
func RunChild() (code int, ok bool) {
	role := os.Getenv(RoleEnv)
	if role == "" {
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch role {
	case roleNaiveProducer:
		err = naiveProduce(ctx, os.Getenv)
	case roleNaiveConsumer:
		err = naiveConsume(ctx, os.Getenv)
	case roleProfiledConsumer:
		err = profiledConsume(ctx, os.Getenv(profileEnv))
	case roleProfiledProducer:
		err = profiledProduce(ctx, os.Getenv(profileEnv))
	default:
		err = fmt.Errorf("unknown %s %q", RoleEnv, role)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1, true
	}
	return 0, true
}
