package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

const natsServerModule = "github.com/nats-io/nats-server/v2"

// NATSServerBinary returns the path of a nats-server built from the module
// version pinned in go.mod. NATS_SERVER_BIN wins when set (the Makefile
// sets it to the binary it built). Otherwise the binary is built once into
// the user cache directory, keyed by version, under a file lock so that
// test binaries running in parallel build it only once.
func NATSServerBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv("NATS_SERVER_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("NATS_SERVER_BIN=%s: %w", bin, err)
		}
		return bin, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	version, err := goOutput(ctx, root, "list", "-m", "-f", "{{.Version}}", natsServerModule)
	if err != nil {
		return "", fmt.Errorf("find the pinned nats-server version (go.mod must list %s as a tool): %w", natsServerModule, err)
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
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp := bin + ".tmp"
	if _, err := goOutput(ctx, root, "build", "-o", tmp, natsServerModule); err != nil {
		return "", fmt.Errorf("build nats-server %s (needs the Go module proxy or a warm module cache): %w", version, err)
	}
	return bin, os.Rename(tmp, bin)
}

// moduleRoot finds the directory of this module's go.mod from the working
// directory, which for tests is the package directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), natsServerModule) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod naming %s above the working directory: set NATS_SERVER_BIN or NATS_URL", natsServerModule)
		}
		dir = parent
	}
}

func goOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
