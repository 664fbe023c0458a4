package testenv

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

var built struct {
	once sync.Once
	dir  string
	err  error
}

// Binaries builds every command of the module (the services, the CLI,
// embed-sim) once per test binary and returns the directory that holds
// them, for tests that run them as the processes a deployment runs, and
// kill them.
func Binaries(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "sluice-test-bin-"); built.err != nil {
			return
		}
		root, err := localenv.SourceRoot()
		if err != nil {
			built.err = err
			return
		}
		_, built.err = localenv.Go(context.Background(), root, "build", "-o", built.dir+"/", "./cmd/...")
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}
