package messages

import (
	"math/rand/v2"
	"testing"
)

// AppendJSONString must escape exactly as encoding/json does without HTML
// escaping: content hashes computed by older releases, and by any other
// canonical writer, depend on every byte.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{"", "plain", `quote " and \ backslash`, "<&> stay", "\u2028\u2029 separators", "é 日本 🙂", "\ufffd literal"}
	for b := range 256 {
		cases = append(cases, string([]byte{'a', byte(b), 'z'}))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", " ", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "\x80", "\xe2\x80", "\u2028", "é", "🙂", "\xff", "<"}
	for range 5000 {
		var s []byte
		for range rng.IntN(12) {
			s = append(s, alphabet[rng.IntN(len(alphabet))]...)
		}
		cases = append(cases, string(s))
	}
	for _, s := range cases {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Fatalf("AppendJSONString(%q) = %q; encoding/json writes %q", s, got[len("prefix"):], want)
		}
	}
}
