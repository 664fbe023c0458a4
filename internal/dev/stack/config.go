package stack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/migrations"
)

// Embedder is the embeddings API a stack's services call.
type Embedder struct {
	// URL is the OpenAI-compatible API's base URL. Defaults to embed-sim,
	// which the stack then runs.
	URL string `json:"url,omitempty"`
	// Model is EMBEDDER_MODEL. Defaults to embedder.DefaultModel.
	Model string `json:"model"`
	// Dims is EMBEDDING_DIMS, the index's dimensions. Defaults to
	// migrations.DefaultDims.
	Dims int `json:"dims"`
	// Encoding is EMBEDDER_ENCODING (float or base64). Defaults to the
	// services' default.
	Encoding string `json:"encoding,omitempty"`
	// NoDims sets EMBEDDER_SEND_DIMS=false, for a model that refuses the
	// dimensions parameter. Defaults to the previous stack's for the same
	// model, then false.
	NoDims bool `json:"no_dims,omitempty"`
}

// simulated reports whether the stack runs embed-sim as its embedder.
func (e Embedder) simulated() bool { return e.URL == "" }

// Config is what `sluice-dev up` starts.
type Config struct {
	// Dir holds the stack: its data, logs, state and environment files.
	// Required.
	Dir string
	// BinDir holds the binaries (make build puts them in bin/). Defaults
	// to the directory of the running executable.
	BinDir string
	// Embedder is the embeddings API; a zero field takes the value the
	// stack in Dir was made with, then the field's default.
	Embedder Embedder
	// APIKey is EMBEDDER_API_KEY, written into the environment files and
	// never into the state. Defaults to none.
	APIKey string
	// Stdout receives the environment to export; Stderr progress.
	Stdout, Stderr io.Writer
}

// applyDefaults fills the zero fields, the embedder's from prev (the
// stack's state) when it exists.
func (c *Config) applyDefaults(prev *Embedder) {
	if c.BinDir == "" {
		if exe, err := os.Executable(); err == nil {
			c.BinDir = filepath.Dir(exe)
		}
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	e := &c.Embedder
	if prev != nil {
		if e.URL == "" {
			e.URL = prev.URL
		}
		if e.Model == "" {
			e.Model, e.NoDims = prev.Model, e.NoDims || prev.NoDims
		}
		if e.Dims == 0 {
			e.Dims = prev.Dims
		}
		if e.Encoding == "" {
			e.Encoding = prev.Encoding
		}
	}
	if e.Model == "" {
		e.Model = embedder.DefaultModel
	}
	if e.Dims == 0 {
		e.Dims = migrations.DefaultDims
	}
}

// Validate says what is wrong with the configuration and how to fix it;
// prev is the embedder the stack in Dir was made with, if any.
func (c Config) Validate(prev *Embedder) error {
	if c.Dir == "" {
		return errors.New("--dir is required: the directory that keeps the stack's data between runs")
	}
	for _, b := range binaries(c.Embedder) {
		if _, err := os.Stat(filepath.Join(c.BinDir, b)); err != nil {
			return fmt.Errorf("binary %s not found in %s: run `make build` first (or pass --bin)", b, c.BinDir)
		}
	}
	if prev != nil && prev.Dims != c.Embedder.Dims {
		return fmt.Errorf("the index in %s holds %d-dimension vectors, not %d: use another --dir, or change the model with `sluice index create --model M --dims N`", c.Dir, prev.Dims, c.Embedder.Dims)
	}
	return nil
}

// binaries are the executables a stack runs.
func binaries(e Embedder) []string {
	if e.simulated() {
		return append([]string{"embed-sim"}, services...)
	}
	return services
}

// services are the long-running services, each its own process, role and
// NATS user.
var services = []string{"consumer", "outbox-relay", "dlq-replayer"}

// randomPassword is a fresh password for one NATS user.
func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
