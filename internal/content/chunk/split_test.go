package chunk

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// checkInvariants fails t unless chunks honour every guarantee of Split
// for text and cfg.
func checkInvariants(t testing.TB, text string, cfg Config, chunks []Chunk) {
	t.Helper()
	valid := utf8.ValidString(text)
	prev := Chunk{Start: -1, End: -1}
	for i, c := range chunks {
		switch {
		case c.Index != i:
			t.Fatalf("chunk %d has Index %d", i, c.Index)
		case c.Start < 0 || c.End > len(text) || c.Start >= c.End:
			t.Fatalf("chunk %d has bad range [%d, %d) in %d bytes", i, c.Start, c.End, len(text))
		case c.Text != text[c.Start:c.End]:
			t.Fatalf("chunk %d Text %q is not text[%d:%d]", i, c.Text, c.Start, c.End)
		case c.Start <= prev.Start || c.End <= prev.End:
			t.Fatalf("chunk %d [%d, %d) does not move past chunk %d [%d, %d)", i, c.Start, c.End, i-1, prev.Start, prev.End)
		case strings.TrimFunc(c.Text, unicode.IsSpace) != c.Text:
			t.Fatalf("chunk %d %q has surrounding whitespace", i, c.Text)
		case cfg.Count(c.Text) > cfg.Size:
			t.Fatalf("chunk %d is %d %s, over the size %d: %q", i, cfg.Count(c.Text), cfg.Unit, cfg.Size, c.Text)
		}
		if valid {
			if !utf8.ValidString(c.Text) {
				t.Fatalf("chunk %d %q is not valid UTF-8", i, c.Text)
			}
		}
		prev = c
	}
	// Every non-space rune must be in some chunk; chunks are ordered, so one
	// sweep suffices.
	k := 0
	for i, r := range text {
		if unicode.IsSpace(r) {
			continue
		}
		for k < len(chunks) && chunks[k].End <= i {
			k++
		}
		if k == len(chunks) || chunks[k].Start > i {
			t.Fatalf("rune %q at byte %d is in no chunk", r, i)
		}
	}
}

func texts(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Text
	}
	return out
}

func chars(size, overlap int) Config { return Config{Size: size, Overlap: overlap, Unit: UnitChars} }

func TestSplitBoundaries(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		text string
		cfg  Config
		want []string
	}{
		{"empty", "", chars(10, 0), nil},
		{"only whitespace", " \n\t\u00a0\u3000 \r\n", chars(10, 0), nil},
		{"fits, trimmed", "  hello world \n", chars(20, 0), []string{"hello world"}},
		{
			"paragraph over line",
			"First paragraph here.\nIt has two lines.\n\nSecond paragraph follows.",
			chars(50, 0),
			[]string{"First paragraph here.\nIt has two lines.", "Second paragraph follows."},
		},
		{
			"paragraph with blank-looking line",
			"First paragraph here.\nIt has two lines.\n  \t\nSecond paragraph follows.",
			chars(50, 0),
			[]string{"First paragraph here.\nIt has two lines.", "Second paragraph follows."},
		},
		{
			"line over sentence",
			"One sentence. Another one here\nthen the next line goes on",
			chars(40, 0),
			[]string{"One sentence. Another one here", "then the next line goes on"},
		},
		{
			"sentence over space",
			"The first sentence ends. The second one is long enough to be cut",
			chars(40, 0),
			[]string{"The first sentence ends.", "The second one is long enough to be cut"},
		},
		{
			"question and exclamation",
			"Is this the end? It is not! There is more text coming",
			chars(30, 0),
			[]string{"Is this the end? It is not!", "There is more text coming"},
		},
		{
			"space over hard cut",
			"alpha beta gamma delta epsilon",
			chars(14, 0),
			[]string{"alpha beta", "gamma delta", "epsilon"},
		},
		{"hard cut without spaces", "abcdefghij", chars(4, 0), []string{"abcd", "efgh", "ij"}},
		{
			"an early space beats a hard cut",
			"aaaa bbbbbbbbbbbbbbb",
			chars(10, 0),
			[]string{"aaaa", "bbbbbbbbbb", "bbbbb"},
		},
		{
			"a boundary too early is passed over for a later one",
			"Hi.\n\nthis goes on and on without end",
			chars(20, 0),
			[]string{"Hi.\n\nthis goes on", "and on without end"},
		},
		{"size one", "ab c", chars(1, 0), []string{"a", "b", "c"}},
		{"multi-byte runes at the cut", "ééééé", chars(2, 0), []string{"éé", "éé", "é"}},
		{
			"CJK sentences",
			"这是第一句。这是第二句。这是第三句。",
			chars(8, 0),
			[]string{"这是第一句。", "这是第二句。", "这是第三句。"},
		},
		{"CJK without punctuation", "一二三四五六七", chars(3, 0), []string{"一二三", "四五六", "七"}},
		{
			"emoji modifiers stay with their base",
			"👍🏽👍🏽👍🏽",
			chars(3, 0),
			[]string{"👍🏽", "👍🏽", "👍🏽"},
		},
		{
			"zero-width joiner sequences stay whole",
			"👨\u200d👩\u200d👧👨\u200d👩\u200d👧",
			chars(6, 0),
			[]string{"👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"},
		},
		{"combining marks stay with their base", "ae\u0301e\u0301", chars(2, 0), []string{"a", "e\u0301", "e\u0301"}},
		{
			"overlap starts at a word",
			"one two three four five six seven",
			chars(15, 6),
			[]string{"one two three", "three four five", "five six seven"},
		},
		{
			"overlap in CJK",
			"一二三四五六七八",
			chars(4, 1),
			[]string{"一二三四", "四五六七", "七八"},
		},
		{
			"trailing whitespace adds no pure-overlap chunk",
			"alpha beta gamma" + strings.Repeat(" ", 40),
			chars(12, 5),
			[]string{"alpha beta", "beta gamma"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Split(tt.text, tt.cfg)
			checkInvariants(t, tt.text, tt.cfg, got)
			if !reflect.DeepEqual(texts(got), tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("Split = %q\nwant    %q", texts(got), tt.want)
			}
		})
	}
}

func TestSplitOffsets(t *testing.T) {
	t.Parallel()

	text := "\n  héllo wörld\n\nsecond"
	got := Split(text, chars(12, 0))
	want := []Chunk{
		{Index: 0, Text: "héllo wörld", Start: 3, End: 16},
		{Index: 1, Text: "second", Start: 18, End: 24},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %+v\nwant %+v", got, want)
	}
}

func TestSplitOverlap(t *testing.T) {
	t.Parallel()

	var words []string
	for i := range 200 {
		words = append(words, "word"+strings.Repeat("x", i%7))
	}
	text := strings.Join(words, " ")
	cfg := chars(80, 20)
	chunks := Split(text, cfg)
	checkInvariants(t, text, cfg, chunks)
	if len(chunks) < 10 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	for i := 1; i < len(chunks); i++ {
		prev, c := chunks[i-1], chunks[i]
		if c.Start >= prev.End {
			t.Errorf("chunk %d starts at %d, not inside chunk %d ending at %d", i, c.Start, i-1, prev.End)
			continue
		}
		overlap := UnitChars.Count(text[c.Start:prev.End])
		if overlap > cfg.Overlap || overlap < cfg.Overlap/3 {
			t.Errorf("chunk %d repeats %d chars, want about %d", i, overlap, cfg.Overlap)
		}
		if text[c.Start-1] != ' ' {
			t.Errorf("chunk %d starts mid-word: %q", i, c.Text)
		}
	}
}

func TestSplitTokens(t *testing.T) {
	t.Parallel()

	english := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100)
	cfg := Config{Size: 32, Overlap: 4, Unit: UnitTokens}
	chunks := Split(english, cfg)
	checkInvariants(t, english, cfg, chunks)
	for _, c := range chunks[:len(chunks)-1] {
		// About four ASCII characters a token: a full chunk is near 128.
		if n := len(c.Text); n < 64 || n > 128 {
			t.Errorf("chunk of %d bytes for 32 tokens of English: %q", n, c.Text)
		}
	}

	cjk := strings.Repeat("日本語の文章です。", 20)
	chunks = Split(cjk, cfg)
	checkInvariants(t, cjk, cfg, chunks)
	for _, c := range chunks {
		if n := utf8.RuneCountInString(c.Text); n > 32 {
			t.Errorf("chunk of %d CJK runes for 32 tokens", n)
		}
	}
}

// TestSplitModelTokens splits text that the estimate gets wrong (CJK,
// code, emoji) with the model's tokenizer: no chunk is over the size by
// the model's own count, and chunks are not much smaller than it either.
func TestSplitModelTokens(t *testing.T) {
	t.Parallel()

	cl100k, _ := tokens.ForModel("text-embedding-3-small")
	o200k, _ := tokens.ForModel("gpt-4o")
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 200 {
		text := randomText(rng, rng.IntN(3000))
		if i%3 == 0 {
			text = codeText(rng, rng.IntN(3000))
		}
		size := MinExactSize + rng.IntN(200)
		cfg := Config{Size: size, Overlap: rng.IntN(size), Unit: UnitTokens, Tokens: cl100k}
		if i%2 == 1 {
			cfg.Tokens = o200k
		}
		checkInvariants(t, text, cfg, Split(text, cfg))
	}

	emoji := strings.Repeat("👨\u200d👩\u200d👧 🎉👍🏽 ", 200)
	cfg := Config{Size: 64, Overlap: 8, Unit: UnitTokens, Tokens: cl100k}
	chunks := Split(emoji, cfg)
	checkInvariants(t, emoji, cfg, chunks)
	if approx := (Config{Size: 64, Overlap: 8, Unit: UnitTokens}); cfg.Count(Split(emoji, approx)[0].Text) <= 64 {
		t.Fatal("the estimate's first chunk of emoji is within 64 tokens: the text does not tell the counts apart")
	}
	for _, c := range chunks[:len(chunks)-1] {
		if n := cfg.Count(c.Text); n < 32 {
			t.Errorf("chunk of %d tokens for a size of 64: %q", n, c.Text)
		}
	}
}

// codeText is source code of many short lines, with the punctuation BPE
// vocabularies spend tokens on.
func codeText(rng *rand.Rand, n int) string {
	lines := []string{
		"func (s *splitter) fit(start, cut int) (int, bool) {\n", "\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"x: %w\", err)\n\t}\n",
		"for i := 0; i < len(xs); i++ { total += xs[i] * 0x7f }\n", "}\n", "\n", "// 注释：计算总和 🎉\n", "x = {\"a\": [1, 2, 3], 'b': None}\n",
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(lines[rng.IntN(len(lines))])
	}
	return b.String()
}

func TestUnitCount(t *testing.T) {
	t.Parallel()

	tests := []struct {
		s                string
		wantChars, wantT int
	}{
		{"", 0, 0},
		{"abcd", 4, 1},
		{"abcde", 5, 2},
		{"é", 1, 1},
		{"éé", 2, 1},
		{"日本", 2, 2},
		{"😀", 1, 1},
		{"hello, world", 12, 3},
	}
	for _, tt := range tests {
		if got := UnitChars.Count(tt.s); got != tt.wantChars {
			t.Errorf("UnitChars.Count(%q) = %d, want %d", tt.s, got, tt.wantChars)
		}
		if got := EstimateTokens(tt.s); got != tt.wantT {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.s, got, tt.wantT)
		}
	}
}

func TestSplitDeterministic(t *testing.T) {
	t.Parallel()

	text := randomText(rand.New(rand.NewPCG(1, 2)), 20_000)
	cfg := DefaultConfig()
	first := Split(text, cfg)
	for range 3 {
		if again := Split(text, cfg); !reflect.DeepEqual(first, again) {
			t.Fatal("Split is not deterministic")
		}
	}
}

func TestSplitProperties(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 500 {
		text := randomText(rng, rng.IntN(3000))
		size := 1 + rng.IntN(200)
		cfg := Config{Size: size, Overlap: rng.IntN(size), Unit: UnitChars}
		if i%2 == 1 {
			cfg.Unit = UnitTokens
		}
		checkInvariants(t, text, cfg, Split(text, cfg))
	}
}

// randomText mixes words, punctuation, newlines and runes of every width.
func randomText(rng *rand.Rand, n int) string {
	pieces := []string{
		"word", "longerword", "a", "the", " ", " ", " ", ". ", "! ", "? ", "\n", "\n\n", "\t",
		"é", "e\u0301", "日本語", "。", "😀", "👍🏽", "👨\u200d👩\u200d👧", "\u00a0", "\u3000", "Ωμέγα", "\r\n",
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func TestSplitPanicsOnInvalidConfig(t *testing.T) {
	t.Parallel()

	defer func() {
		if recover() == nil {
			t.Error("Split with an invalid config did not panic")
		}
	}()
	Split("text", Config{})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"default", DefaultConfig(), ""},
		{"chars", Config{Size: 2000, Overlap: 200, Unit: UnitChars}, ""},
		{"no overlap", Config{Size: 1, Unit: UnitTokens}, ""},
		{"zero", Config{}, "unit"},
		{"zero size", Config{Size: 0, Unit: UnitChars}, "size 0: must be at least 1"},
		{"negative overlap", Config{Size: 10, Overlap: -1, Unit: UnitChars}, "overlap -1"},
		{"overlap equals size", Config{Size: 10, Overlap: 10, Unit: UnitChars}, "must be smaller than size 10"},
		{"unknown unit", Config{Size: 10, Unit: "bytes"}, `unit "bytes"`},
		{"huge", Config{Size: 1 << 40, Unit: UnitTokens}, "at most"},
		{"model tokens", Config{Size: MinExactSize, Unit: UnitTokens, Tokens: cl100k()}, ""},
		{"too few model tokens", Config{Size: MinExactSize - 1, Unit: UnitTokens, Tokens: cl100k()}, "at least 4 tokens"},
		{"estimated tokens", Config{Size: 1, Unit: UnitTokens, Tokens: tokens.Approximate{}}, ""},
		{"unknown counter", Config{Size: 10, Unit: UnitTokens, Tokens: wordCounter{}}, "use tokens.ForModel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("Hello, world. This is a test.\n\nNew paragraph here!", uint16(10), uint16(3), false)
	f.Add("这是第一句。这是第二句。", uint16(4), uint16(1), true)
	f.Add("👨\u200d👩\u200d👧 e\u0301 \u00a0\u3000 tabs\tand\r\nlines", uint16(2), uint16(0), false)
	f.Add("nospacesatallinthisverylongword", uint16(5), uint16(4), true)
	f.Add("   \n\n  ", uint16(1), uint16(0), false)
	f.Add("invalid \xff\xfe utf-8 \xe6\x97", uint16(3), uint16(1), false)
	f.Fuzz(func(t *testing.T, text string, size, overlap uint16, tokens bool) {
		cfg := Config{Size: 1 + int(size)%300, Unit: UnitChars}
		cfg.Overlap = int(overlap) % cfg.Size
		if tokens {
			cfg.Unit = UnitTokens
		}
		chunks := Split(text, cfg)
		if len(chunks) > len(text) {
			t.Fatalf("%d chunks for %d bytes", len(chunks), len(text))
		}
		checkInvariants(t, text, cfg, chunks)
	})
}

func BenchmarkSplit(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 5))
	var sb strings.Builder
	words := strings.Fields("the of and to in is was that for on as with by at from this be are an it or which have not")
	for sb.Len() < 1<<20 {
		n := 3 + rng.IntN(20)
		for i := range n {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[rng.IntN(len(words))])
		}
		sb.WriteString(". ")
		if rng.IntN(6) == 0 {
			sb.WriteString("\n\n")
		}
	}
	text := sb.String()
	for _, cfg := range []Config{DefaultConfig(), {Size: 2000, Overlap: 200, Unit: UnitChars}} {
		b.Run(string(cfg.Unit), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				Split(text, cfg)
			}
		})
	}
}

func cl100k() tokens.Counter {
	c, _ := tokens.ForModel("text-embedding-3-small")
	return c
}

// wordCounter is a counter the splitter cannot cut by.
type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }
func (wordCounter) Encoding() string   { return "words" }
func (wordCounter) Exact() bool        { return true }
