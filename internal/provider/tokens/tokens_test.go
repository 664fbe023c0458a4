package tokens_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

func TestForModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, encoding string
		exact           bool
	}{
		{"text-embedding-3-small", tokens.Cl100kBase, true},
		{"text-embedding-3-large", tokens.Cl100kBase, true},
		{"text-embedding-ada-002", tokens.Cl100kBase, true},
		{"openai/text-embedding-3-small", tokens.Cl100kBase, true},
		{"embed-sim-1", tokens.Cl100kBase, true},
		{"embed-sim-2", tokens.Cl100kBase, true},
		{"embed-sim", tokens.ApproximateEncoding, false},
		{"gpt-4o", tokens.O200kBase, true},
		{"gpt-4o-2024-08-06", tokens.O200kBase, true},
		{"nomic-embed-text", tokens.ApproximateEncoding, false},
	} {
		c, exact := tokens.ForModel(tc.model)
		if exact != tc.exact || c.Exact() != tc.exact || c.Encoding() != tc.encoding {
			t.Errorf("ForModel(%q) = %s (exact %v), want %s (exact %v)", tc.model, c.Encoding(), exact, tc.encoding, tc.exact)
		}
	}
}

// TestTokenizerCounts checks counts against those of OpenAI's own
// tokenizer (tiktoken, here as js-tiktoken 1.x): these are the texts that the four-characters
// estimate gets most wrong.
func TestTokenizerCounts(t *testing.T) {
	t.Parallel()
	cl, _ := tokens.ForModel("text-embedding-3-small")
	o2, _ := tokens.ForModel("gpt-4o")
	for _, tc := range []struct {
		text   string
		cl, o2 int
	}{
		{"", 0, 0},
		{"hello world", 2, 2},
		{"🎉👍🏽", 9, 5},
		{"漢字", 3, 2},
		{"日本語のテキスト", 8, 6},
		{"func main() { return x+1 }", 9, 9},
	} {
		if got := cl.Count(tc.text); got != tc.cl {
			t.Errorf("cl100k_base counts %q as %d tokens, want %d", tc.text, got, tc.cl)
		}
		if got := o2.Count(tc.text); got != tc.o2 {
			t.Errorf("o200k_base counts %q as %d tokens, want %d", tc.text, got, tc.o2)
		}
	}
	if got := (tokens.Approximate{}).Count("🎉👍🏽"); got != 3 {
		t.Errorf("the estimate counts three emoji as %d tokens, want 3", got)
	}
}

func TestTokenizerEnds(t *testing.T) {
	t.Parallel()
	cl, _ := tokens.ForModel("text-embedding-3-small")
	tk := cl.(*tokens.Tokenizer)
	for _, text := range []string{"hello world", "🎉👍🏽 漢字 and code: x := y[1:]", "\xff\xfe broken"} {
		var ends []int
		tk.Ends(text, func(end int) { ends = append(ends, end) })
		if len(ends) != cl.Count(text) {
			t.Errorf("Ends(%q) gave %d tokens, Count %d", text, len(ends), cl.Count(text))
		}
		if len(ends) == 0 || ends[len(ends)-1] != len(text) {
			t.Errorf("Ends(%q) = %v, want the last at %d", text, ends, len(text))
		}
	}
}

func TestAtMost(t *testing.T) {
	t.Parallel()
	cl, _ := tokens.ForModel("text-embedding-3-small")
	emoji := strings.Repeat("🎉", 10) // 30 tokens in 40 bytes
	if !tokens.AtMost(cl, emoji, 30) || tokens.AtMost(cl, emoji, 29) {
		t.Errorf("AtMost of %d tokens is wrong at 30 or 29", cl.Count(emoji))
	}
	if got := tokens.Sum(cl, []string{"hello world", emoji}); got != 32 {
		t.Errorf("Sum = %d, want 32", got)
	}
}

func TestSelectLogsApproximate(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := tokens.Select("nomic-embed-text", zerolog.New(&buf))
	if c.Exact() || !strings.Contains(buf.String(), "approximate") || !strings.Contains(buf.String(), "nomic-embed-text") {
		t.Errorf("Select for an unknown model logged %q", buf.String())
	}
	buf.Reset()
	if c := tokens.Select("text-embedding-3-small", zerolog.New(&buf)); !c.Exact() || strings.Contains(buf.String(), "approximate") {
		t.Errorf("Select for a known model logged %q", buf.String())
	}
	// The simulator's default model, which every service defaults to,
	// counts exactly: a run against it warns of nothing.
	buf.Reset()
	if c := tokens.Select(embedder.DefaultModel, zerolog.New(&buf)); !c.Exact() || strings.Contains(buf.String(), "approximate") {
		t.Errorf("Select for the default model %s logged %q", embedder.DefaultModel, buf.String())
	}
}
