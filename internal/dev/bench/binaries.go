package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// Binary names the benchmark runs.
const (
	binProducer  = "producer"
	binConsumer  = "consumer"
	binEmbedSim  = "embed-sim"
	binRelay     = "outbox-relay"
	binRiverPeer = "sluice-river-peer"
)

// binaries locates the executables of one invocation: the services and
// embed-sim from the main module, the River peer from bench/, and this
// program itself for the naive workers.
type binaries struct {
	dir  string // where built binaries go
	root string // repository root; empty when every binary was prebuilt
	self string
}

func newBinaries(binDir, buildDir string) (*binaries, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate this program: %w", err)
	}
	b := &binaries{dir: buildDir, self: self}
	if binDir != "" && hasAll(binDir, binProducer, binConsumer, binEmbedSim, binRelay) {
		b.dir = binDir
		return b, nil
	}
	if b.root, err = repoRoot(); err != nil {
		return nil, err
	}
	return b, nil
}

func hasAll(dir string, names ...string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// services builds (or finds) producer, consumer, embed-sim and
// outbox-relay.
func (b *binaries) services(ctx context.Context) error {
	if hasAll(b.dir, binProducer, binConsumer, binEmbedSim, binRelay) {
		return nil
	}
	return goBuild(ctx, b.root, b.dir, "./cmd/producer", "./cmd/consumer", "./cmd/embed-sim", "./cmd/outbox-relay")
}

// riverPeer builds (or finds) the River peer, which lives in its own
// module so that River never becomes a dependency of the services.
func (b *binaries) riverPeer(ctx context.Context) (string, error) {
	path := b.path(binRiverPeer)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if b.root == "" {
		var err error
		if b.root, err = repoRoot(); err != nil {
			return "", err
		}
	}
	return path, goBuild(ctx, filepath.Join(b.root, "bench"), b.dir, "./cmd/sluice-river-peer")
}

func (b *binaries) path(name string) string { return filepath.Join(b.dir, name) }

func goBuild(ctx context.Context, dir, out string, pkgs ...string) error {
	_, err := localenv.Go(ctx, dir, append([]string{"build", "-o", out + string(filepath.Separator)}, pkgs...)...)
	return err
}

// repoRoot finds the repository from the working directory upwards.
func repoRoot() (string, error) {
	root, err := localenv.SourceRoot()
	if errors.Is(err, localenv.ErrNoSource) {
		return "", errors.New("not inside the sluice source tree: run from the repository, or pass --bin-dir with prebuilt producer, consumer, embed-sim, outbox-relay and sluice-river-peer")
	}
	return root, err
}
