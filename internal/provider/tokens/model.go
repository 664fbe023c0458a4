package tokens

import (
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/tiktoken-go/tokenizer"
)

// modelEncodings are the vocabularies of OpenAI's embedding models, which
// tiktoken's own table lacks but for ada-002. Other models are counted as
// tiktoken's table says, or estimated; the simulator's are
// SimulatorEncoding's.
var modelEncodings = map[string]string{
	"text-embedding-ada-002": Cl100kBase,
	"text-embedding-3-small": Cl100kBase,
	"text-embedding-3-large": Cl100kBase,
}

// The simulator's models (embed-sim's, such as its default embed-sim-1)
// stand in for OpenAI's embedding models: they are named SimulatorPrefix
// and something, and count tokens as those do, exactly, with
// SimulatorEncoding.
const (
	SimulatorPrefix   = "embed-sim-"
	SimulatorEncoding = Cl100kBase
)

// cache holds one Tokenizer per encoding: a vocabulary is a large map,
// built on first use. models remembers ForModel's answers, which a
// server asks on every request.
var cache, models sync.Map // encoding → *Tokenizer; model → Counter

// ForModel returns the counter of a model, and whether it is exact. A
// model known by name or by the prefix of a family (such as gpt-4o-,
// which use o200k_base) gets its vocabulary; any other model gets
// Approximate, and exact is false: log that its counts are estimates.
// A provider's prefix ("openai/text-embedding-3-small") is ignored.
func ForModel(model string) (c Counter, exact bool) {
	if c, ok := models.Load(model); ok {
		return c.(Counter), c.(Counter).Exact()
	}
	c = forModel(model)
	models.Store(model, c)
	return c, c.Exact()
}

func forModel(model string) Counter {
	name := model
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	enc, ok := modelEncodings[name]
	if !ok && strings.HasPrefix(name, SimulatorPrefix) {
		enc, ok = SimulatorEncoding, true
	}
	if !ok {
		codec, err := tokenizer.ForModel(tokenizer.Model(name))
		if err != nil {
			return Approximate{}
		}
		enc = codec.GetName()
	}
	if t, ok := cache.Load(enc); ok {
		return t.(*Tokenizer)
	}
	t, err := NewTokenizer(enc)
	if err != nil {
		return Approximate{}
	}
	actual, _ := cache.LoadOrStore(enc, t)
	return actual.(*Tokenizer)
}

// Select is ForModel for a service starting up: it logs, once, that the
// counts are estimates when the model has no known vocabulary, so that an
// operator knows chunk sizes and token limits are approximate.
func Select(model string, log zerolog.Logger) Counter {
	c, _ := ForModel(model)
	Log(log, model, c)
	return c
}

// Log logs which counter counts model's tokens, warning when it is the
// estimate.
func Log(log zerolog.Logger, model string, c Counter) {
	if c.Exact() {
		log.Info().Str("model", model).Str("encoding", c.Encoding()).Msg("counting tokens with the model's tokenizer")
	} else {
		log.Warn().Str("model", model).Msg("no tokenizer known for this model: token counts are approximate (about four characters a token); keep chunk sizes well below the context limit")
	}
}
