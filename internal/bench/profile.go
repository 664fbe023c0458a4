package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/sluicehq/sluice/internal/consumer"
)

// profiledConsume runs the consumer service exactly as cmd/consumer does,
// under the CPU profiler, and writes its allocation profile on the way
// out. The services serve no pprof endpoint, and this keeps it that way:
// profiling is something the benchmark does to them, not a feature.
func profiledConsume(ctx context.Context, prefix string) error {
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
	runErr := consumer.Run(ctx, nil, os.LookupEnv, os.Stderr)
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
