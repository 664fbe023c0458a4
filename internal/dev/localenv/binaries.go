package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// NATSServerModule is the Go module nats-server is built from, at the
// version go.mod pins.
const NATSServerModule = "github.com/nats-io/nats-server/v2"

// ErrNoNATSServer is what NATSServerBinary returns, wrapped, when it can
// neither find nor build a nats-server.
var ErrNoNATSServer = errors.New("no nats-server binary")

// NATSServerBinary returns the path of a nats-server built from the module
// version pinned in go.mod. NATS_SERVER_BIN wins when set (the Makefile
// sets it to the binary it built). Otherwise the binary is built once into
// the user cache directory, keyed by version, under a file lock so that
// test binaries running in parallel build it only once.
func NATSServerBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv("NATS_SERVER_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%w: NATS_SERVER_BIN=%s: %w", ErrNoNATSServer, bin, err)
		}
		return bin, nil
	}
	root, err := SourceRoot()
	if err != nil {
		return "", fmt.Errorf("%w: %w: set NATS_SERVER_BIN", ErrNoNATSServer, err)
	}
	version, err := Go(ctx, root, "list", "-m", "-f", "{{.Version}}", NATSServerModule)
	if err != nil {
		return "", fmt.Errorf("%w: find the pinned nats-server version (go.mod must list %s as a tool): %w", ErrNoNATSServer, NATSServerModule, err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "sluice")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "nats-server-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	return bin, WithFileLock(bin+".lock", func() error {
		if _, err := os.Stat(bin); err == nil {
			return nil
		}
		tmp := bin + ".tmp"
		if _, err := Go(ctx, root, "build", "-o", tmp, NATSServerModule); err != nil {
			return fmt.Errorf("%w: build nats-server %s (needs the Go module proxy or a warm module cache): %w", ErrNoNATSServer, version, err)
		}
		return os.Rename(tmp, bin)
	})
}

// WithFileLock runs fn holding an exclusive lock on the file at path,
// which it creates if need be, so that processes running side by side
// (the test binaries of one `go test` run) do fn one at a time.
func WithFileLock(path string, fn func() error) error {
	lock, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	return fn()
}

// ErrNoSource is what SourceRoot returns when the working directory is not
// inside the sluice source tree.
var ErrNoSource = errors.New("not inside the sluice source tree (no go.mod of module github.com/sluicehq/sluice above the working directory)")

// modulePath identifies the repository's go.mod.
const modulePath = "module github.com/sluicehq/sluice\n"

// SourceRoot finds the repository, the directory of the sluice module's
// go.mod, from the working directory upwards: make runs from the root, go
// test from the package directory.
func SourceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoSource
		}
		dir = parent
	}
}

// Go runs the go command with args in dir and returns its output, trimmed;
// a failure's error quotes the output.
func Go(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
