package bench_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/bench"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// TestMain lets the test binary play the benchmark's child roles: the
// naive workers re-execute the running binary.
func TestMain(m *testing.M) {
	if code, ok := bench.RunChild(); ok {
		os.Exit(code)
	}
	testenv.Main(m)
}
