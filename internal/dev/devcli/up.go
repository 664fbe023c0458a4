package devcli

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/dev/stack"
)

// runUp is `sluice-dev up`.
func runUp(ctx context.Context, env Env, args []string) error {
	var c stack.Config
	l := newLoader(env, "up")
	l.String(&c.Dir, "dir", "", "", "directory that keeps the stack's database, streams, logs and environment files between runs (required)")
	l.String(&c.BinDir, "bin", "", "", "directory holding the service binaries and embed-sim (make build puts them in bin/); defaults to sluice-dev's own")
	l.String(&c.Embedder.URL, "embedder-url", "", "", "OpenAI-compatible embeddings API the services call; defaults to embed-sim, which the stack then runs")
	l.String(&c.Embedder.Model, "model", "", "", "EMBEDDER_MODEL; defaults to the stack's previous one, then embed-sim-1")
	l.Int(&c.Embedder.Dims, "dims", "", 0, "EMBEDDING_DIMS, the index's dimensions; defaults to the stack's previous one, then 384")
	l.String(&c.Embedder.Encoding, "encoding", "", "", "EMBEDDER_ENCODING: float or base64; defaults to the services' default")
	l.Bool(&c.Embedder.NoDims, "no-dimensions", "", false, "EMBEDDER_SEND_DIMS=false: the model refuses the dimensions parameter and its vectors have --dims dimensions of their own")
	l.String(&c.APIKey, "embedder-api-key", "EMBEDDER_API_KEY", "", "the provider's API key, written into the environment files only")
	if err := parse(l, args); err != nil {
		return err
	}
	if c.Dir == "" {
		return fmt.Errorf("%w: --dir is required: the directory that keeps the stack's data between runs", errUsage)
	}
	c.Stdout, c.Stderr = env.Stdout, env.Stderr
	return stack.Up(ctx, c)
}

// runDown is `sluice-dev down`.
func runDown(ctx context.Context, env Env, args []string) error {
	var dir string
	l := newLoader(env, "down")
	l.String(&dir, "dir", "", "", "directory of the stack to stop (required); its data stays for the next up")
	if err := parse(l, args); err != nil {
		return err
	}
	if dir == "" {
		return fmt.Errorf("%w: --dir is required", errUsage)
	}
	return stack.Down(ctx, dir, env.Stderr)
}
