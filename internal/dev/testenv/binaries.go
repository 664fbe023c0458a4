package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
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
// embed-sim) and returns the directory that holds them, for tests that
// run them as the processes a deployment runs, and kill them.
//
// The directory is one per source tree, shared by the test binaries of a
// `go test` run and built under a file lock: go build leaves a binary
// whose build ID is current alone, so only the first package to ask
// links the commands (about 20 CPU seconds), and the others wait a
// second. go build replaces a changed binary by renaming the new one
// over it (when the temporary directory is on the same file system), so
// a process still running the old one is unaffected.
func Binaries(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.dir, built.err = buildCommands(context.Background()) })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// buildCommands builds ./cmd/... into the source tree's directory of
// test binaries.
func buildCommands(ctx context.Context) (string, error) {
	root, err := localenv.SourceRoot()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(cache, "sluice", "test-bin-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, localenv.WithFileLock(dir+".lock", func() error {
		_, err := localenv.Go(ctx, root, "build", "-o", dir+string(filepath.Separator), "./cmd/...")
		return err
	})
}
