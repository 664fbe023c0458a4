package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A second up takes the embedder the stack was made with unless told
// otherwise, and refuses other dimensions than its index holds, saying
// what to do instead.
func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, b := range binaries(Embedder{}) {
		if err := os.WriteFile(filepath.Join(bin, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ollama := &Embedder{URL: "http://127.0.0.1:11434/v1", Model: "nomic-embed-text", Dims: 768, Encoding: "float"}
	for _, c := range []struct {
		name    string
		given   Embedder
		prev    *Embedder
		want    Embedder
		wantErr string
	}{
		{"first up", Embedder{}, nil, Embedder{Model: "embed-sim-1", Dims: 384}, ""},
		{"second up", Embedder{}, ollama, *ollama, ""},
		{"another model, same dims", Embedder{Model: "other"}, ollama, Embedder{URL: ollama.URL, Model: "other", Dims: 768, Encoding: "float"}, ""},
		{"a model that refuses dimensions, again", Embedder{}, &Embedder{URL: ollama.URL, Model: "ada", Dims: 1536, NoDims: true}, Embedder{URL: ollama.URL, Model: "ada", Dims: 1536, NoDims: true}, ""},
		{"another model after one that refuses dimensions", Embedder{Model: "other"}, &Embedder{URL: ollama.URL, Model: "ada", Dims: 1536, NoDims: true}, Embedder{URL: ollama.URL, Model: "other", Dims: 1536}, ""},
		{"other dims", Embedder{Dims: 1024}, ollama, Embedder{}, "holds 768-dimension vectors, not 1024: use another --dir, or change the model with `sluice index create"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Dir: t.TempDir(), BinDir: bin, Embedder: c.given}
			cfg.applyDefaults(c.prev)
			err := cfg.Validate(c.prev)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Validate: %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Embedder != c.want {
				t.Errorf("embedder %+v, want %+v", cfg.Embedder, c.want)
			}
		})
	}
	if err := (Config{BinDir: bin}).Validate(nil); err == nil || !strings.Contains(err.Error(), "--dir is required") {
		t.Errorf("no --dir: %v", err)
	}
	if err := (Config{Dir: "d", BinDir: t.TempDir()}).Validate(nil); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("no binaries: %v", err)
	}
}
