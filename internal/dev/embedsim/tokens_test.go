package embedsim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// embed-sim counts an input's tokens with the requested model's tokenizer,
// as the client does, and refuses an input over the context length and a
// request over the token cap as the provider does. The texts here are
// short in bytes and long in tokens: emoji cost three tokens each in
// cl100k_base, one by the estimate.
func TestTokenLimits(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{MaxInputTokens: 100, MaxRequestTokens: 250})
	counter, _ := tokens.ForModel("text-embedding-3-small")
	long := strings.Repeat("🎉", 34) // 102 tokens, 136 bytes
	fits := strings.Repeat("🎉", 33) // 99 tokens

	ok := mustPost(t, s.URL(), map[string]any{"model": "text-embedding-3-small", "input": []string{fits, "hello world"}})
	var w wireReply
	if err := json.Unmarshal(ok.body, &w); err != nil || ok.status != http.StatusOK {
		t.Fatalf("inputs within the limits: status %d: %s", ok.status, ok.body)
	}
	if want := counter.Count(fits) + 2; w.Usage.PromptTokens != want || w.Usage.TotalTokens != want {
		t.Errorf("usage %+v, want %d tokens, the model's count", w.Usage, want)
	}

	over := mustPost(t, s.URL(), map[string]any{"model": "text-embedding-3-small", "input": []string{"hello", long}})
	if e := apiErr(t, over); over.status != http.StatusBadRequest || deref(e.Error.Code) != "context_length_exceeded" ||
		!strings.Contains(e.Error.Message, "maximum context length is 100 tokens, however you requested 102 tokens") {
		t.Errorf("an input of %d tokens: status %d, %s; want 400 context_length_exceeded", counter.Count(long), over.status, over.body)
	}

	capped := mustPost(t, s.URL(), map[string]any{"model": "text-embedding-3-small", "input": []string{fits, fits, fits}})
	if e := apiErr(t, capped); capped.status != http.StatusBadRequest || deref(e.Error.Code) != "max_tokens_per_request" ||
		e.Error.Message != "Requested 297 tokens, max 250 tokens per request" {
		t.Errorf("a request of 297 tokens: status %d, %s; want 400 max_tokens_per_request", capped.status, capped.body)
	}

	// A model without a known tokenizer is counted by the estimate, as the
	// client counts it: the same emoji fit.
	if r := mustPost(t, s.URL(), map[string]any{"model": "nomic-embed-text", "input": long}); r.status != http.StatusOK {
		t.Errorf("an unknown model's input of %d estimated tokens: status %d, %s", tokens.Approximate{}.Count(long), r.status, r.body)
	}

	var recorded []int
	for _, r := range s.Requests() {
		recorded = append(recorded, r.Tokens)
	}
	if want := []int{counter.Count(fits) + 2, 1 + counter.Count(long), 297, 34}; !slices.Equal(recorded, want) {
		t.Errorf("request log tokens %v, want %v", recorded, want)
	}
}

func TestTokenLimitsDefault(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{})
	counter, _ := tokens.ForModel("text-embedding-3-small")
	long := strings.Repeat("語", 4000) + strings.Repeat("🎉", 1400) // 8,200 tokens; 4,000+1,400 by the estimate
	if n := counter.Count(long); n <= tokens.DefaultMaxInputTokens {
		t.Fatalf("the long input is %d tokens, within the default context", n)
	}
	r := mustPost(t, s.URL(), map[string]any{"model": "text-embedding-3-small", "input": long})
	if e := apiErr(t, r); r.status != http.StatusBadRequest || deref(e.Error.Code) != "context_length_exceeded" {
		t.Errorf("status %d, %s; want 400 context_length_exceeded at the default context of %d", r.status, r.body, tokens.DefaultMaxInputTokens)
	}
	unlimited := StartTest(t, Config{MaxInputTokens: -1})
	if r := mustPost(t, unlimited.URL(), map[string]any{"model": "text-embedding-3-small", "input": long}); r.status != http.StatusOK {
		t.Errorf("with no limit: status %d, %s", r.status, r.body)
	}
}
