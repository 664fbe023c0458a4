package embedder_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// hardCorpus is text the four-characters estimate gets most wrong: CJK
// prose with rare characters, source code, and emoji.
func hardCorpus(rng *rand.Rand) []string {
	var cjk, code, emoji strings.Builder
	for cjk.Len() < 120_000 {
		// Common and rare CJK Unified Ideographs, and kana, with full stops.
		cjk.WriteRune(rune(0x4E00 + rng.IntN(0x5000)))
		if rng.IntN(3) == 0 {
			cjk.WriteRune(rune(0x3041 + rng.IntN(80)))
		}
		if rng.IntN(40) == 0 {
			cjk.WriteString("。")
		}
	}
	for i := 0; code.Len() < 120_000; i++ {
		fmt.Fprintf(&code, "func f%d(xs []int) (int, error) {\n\tif len(xs) == 0 {\n\t\treturn 0, errors.New(\"empty: %x\")\n\t}\n\treturn xs[%d]*0x%x + f%d(xs[1:]), nil\n}\n\n", i, rng.Uint64(), i%7, rng.Uint32(), i+1)
	}
	faces := []string{"🎉", "👍🏽", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "🧑🏿\u200d💻", "🇯🇵", "❤️"}
	for emoji.Len() < 120_000 {
		emoji.WriteString(faces[rng.IntN(len(faces))])
		if rng.IntN(8) == 0 {
			emoji.WriteByte(' ')
		}
	}
	return []string{cjk.String(), code.String(), emoji.String()}
}

// Chunked at 8,000 of the model's tokens, a corpus of CJK text, code and
// emoji yields no chunk over the 8,191-token context by the model's own
// count, and embed-sim, counting as the provider does, refuses none of
// them. Chunked by the estimate instead, the same corpus is refused.
func TestChunksOfModelTokensFitTheContext(t *testing.T) {
	t.Parallel()
	const model = "text-embedding-3-small"
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 8})
	client := newOpenAI(t, embedder.Config{URL: sim.URL(), Model: model, Dims: 8})
	counter, exact := tokens.ForModel(model)
	if !exact {
		t.Fatalf("%s has no tokenizer", model)
	}
	corpus := hardCorpus(rand.New(rand.NewPCG(4, 2)))

	refused := func(cfg chunk.Config) (chunks, over, rejected int) {
		for _, doc := range corpus {
			for _, c := range chunk.Split(doc, cfg) {
				chunks++
				if counter.Count(c.Text) > tokens.DefaultMaxInputTokens {
					over++
				}
				if _, err := client.Embed(context.Background(), []string{c.Text}); err != nil {
					rejected++
				}
			}
		}
		return chunks, over, rejected
	}
	chunks, over, rejected := refused(chunk.Config{Size: 8000, Overlap: 200, Unit: chunk.UnitTokens, Tokens: counter})
	if chunks < 6 || over != 0 || rejected != 0 {
		t.Errorf("by the model's tokens: %d chunks, %d over the context, %d refused; want none over or refused", chunks, over, rejected)
	}
	if n := sim.Counts().ByFault["context_length"]; n != 0 {
		t.Errorf("embed-sim answered context_length_exceeded %d times", n)
	}
	if _, over, rejected := refused(chunk.Config{Size: 8000, Overlap: 200, Unit: chunk.UnitTokens}); over == 0 || rejected != over || sim.Counts().ByFault["context_length"] != over {
		t.Errorf("by the estimate: %d chunks over the context, %d refused, %d answered context_length_exceeded; the corpus does not tell the counts apart",
			over, rejected, sim.Counts().ByFault["context_length"])
	}
}
