package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
)

// The generated corpus is reproducible, has exactly the asked share of
// poison records, and every record is exactly one chunk to the producer's
// own reader and chunker, so the chunk count of a run is known in advance.
func TestGeneratedCorpusIsOneChunkPerRecord(t *testing.T) {
	t.Parallel()
	gen := func(seed uint64) []byte {
		var b bytes.Buffer
		stats, err := GenerateCorpus(&b, CorpusOptions{Records: 500, Seed: seed, PoisonPercent: 5})
		if err != nil {
			t.Fatal(err)
		}
		if stats.Records != 500 || stats.Poison != 25 || stats.Bytes != int64(b.Len()) {
			t.Fatalf("stats %+v for %d bytes, want 500 records, 25 poison", stats, b.Len())
		}
		return b.Bytes()
	}
	first := gen(42)
	if !bytes.Equal(first, gen(42)) {
		t.Error("the same seed gave a different corpus")
	}
	if bytes.Equal(first, gen(43)) {
		t.Error("a different seed gave the same corpus")
	}
	r, err := corpus.NewReader(corpus.Config{JSONL: true, Inputs: []string{"-"}, Stdin: bytes.NewReader(first)})
	if err != nil {
		t.Fatal(err)
	}
	docs, poison := 0, 0
	err = r.Walk(context.Background(), func(d corpus.Document) error {
		docs++
		if d.Status != corpus.StatusOK {
			t.Errorf("%s: status %s: %v", d.NativeID, d.Status, d.Err)
		}
		if n := len(chunk.Split(d.Text, chunk.DefaultConfig())); n != 1 {
			t.Errorf("%s splits into %d chunks", d.NativeID, n)
		}
		if strings.Contains(d.Text, PoisonMarker) {
			poison++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs != 500 || poison != 25 {
		t.Errorf("read %d documents, %d poison; want 500, 25", docs, poison)
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestConfigRejectsUnknownScenario(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if _, err := ParseFlags([]string{"--only", "pipeline-384,warp"}, &stderr); err == nil || !strings.Contains(err.Error(), `"warp"`) {
		t.Errorf("--only warp: err = %v, want one naming the unknown scenario", err)
	}
	cfg, err := ParseFlags([]string{"--quick"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.selected(ScenarioRiver) || cfg.selected(ScenarioScale) || cfg.Reps != 1 || cfg.Chunks != quickChunks {
		t.Errorf("--quick resolved to %+v", cfg)
	}
}
