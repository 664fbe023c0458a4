package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/producer"
)

// profiledConsume runs the consumer service exactly as cmd/consumer does,
// under the profiler. The services serve no pprof endpoint, and this keeps
// it that way: profiling is something the benchmark does to them, not a
// feature.
func profiledConsume(ctx context.Context, prefix string) error {
	return profiled(prefix, func() error { return consumer.Run(ctx, nil, os.LookupEnv, os.Stderr) })
}

// profiledProduce runs the producer exactly as cmd/producer does, with
// this process's arguments, under the profiler.
func profiledProduce(ctx context.Context, prefix string) error {
	return profiled(prefix, func() error {
		return producer.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr)
	})
}

// profiled runs run under the CPU profiler and writes its allocation
// profile on the way out, to files named after prefix.
func profiled(prefix string, run func() error) error {
	if prefix == "" {
		return fmt.Errorf("%s is required", profileEnv)
	}
	cpu, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return err
	}
	defer cpu.Close()
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return err
	}
	runErr := run()
	pprof.StopCPUProfile()
	allocs, err := os.Create(prefix + ".allocs.pprof")
	if err != nil {
		return errors.Join(runErr, err)
	}
	defer allocs.Close()
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	return errors.Join(runErr, pprof.Lookup("allocs").WriteTo(allocs, 0))
}
