package batchapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// Limits bound one batch request file. The defaults are the provider's.
type Limits struct {
	// MaxRequests is the most requests (lines) in a file. Defaults to
	// 50,000.
	MaxRequests int
	// MaxInputs is the most embedding inputs in a file, across its
	// requests. Defaults to 50,000.
	MaxInputs int
	// MaxBytes is the largest file. Defaults to 200 MB.
	MaxBytes int64
	// MaxTokens is the most input tokens in a file, by the model's
	// tokenizer: set it to the share of the enqueued-token quota one batch
	// may take. Defaults to 0: no limit.
	MaxTokens int
	// MaxInputsPerRequest is the most inputs in one request. Defaults to
	// 2048, the embeddings endpoint's limit.
	MaxInputsPerRequest int
	// MaxRequestTokens is the most tokens in one request's inputs
	// together. Defaults to tokens.DefaultMaxRequestTokens.
	MaxRequestTokens int
}

// Defaults of Limits, the provider's.
const (
	DefaultMaxRequests         = 50_000
	DefaultMaxInputs           = 50_000
	DefaultMaxBytes            = 200 << 20
	DefaultMaxInputsPerRequest = 2048
)

func (l *Limits) applyDefaults() {
	if l.MaxRequests == 0 {
		l.MaxRequests = DefaultMaxRequests
	}
	if l.MaxInputs == 0 {
		l.MaxInputs = DefaultMaxInputs
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxInputsPerRequest == 0 {
		l.MaxInputsPerRequest = DefaultMaxInputsPerRequest
	}
	if l.MaxRequestTokens == 0 {
		l.MaxRequestTokens = tokens.DefaultMaxRequestTokens
	}
}

// BuilderConfig configures a Builder.
type BuilderConfig struct {
	// Model is the embedding model every request asks for; a batch holds
	// one model. Required.
	Model string
	// Dims is the dimensions parameter. Defaults to 0: not sent.
	Dims int
	// Encoding is the encoding_format: "base64" or "float". Defaults to
	// "base64", a third of the bytes of floats in the output file.
	Encoding string
	// Limits bound the file. Defaults to the provider's.
	Limits Limits
	// Counter counts tokens. Defaults to the model's tokenizer
	// (tokens.ForModel), as the provider counts them.
	Counter tokens.Counter
}

// Validate reports the first problem with c, saying how to fix it.
func (c BuilderConfig) Validate() error {
	switch {
	case c.Model == "":
		return errors.New("batchapi: builder Model is required (the embedder's EMBEDDER_MODEL)")
	case c.Dims < 0:
		return fmt.Errorf("batchapi: builder Dims = %d, want 0 (model default) or a positive dimension", c.Dims)
	case c.Encoding != "" && c.Encoding != "base64" && c.Encoding != "float":
		return fmt.Errorf("batchapi: builder Encoding %q, want \"base64\" or \"float\"", c.Encoding)
	}
	l := c.Limits
	if l.MaxRequests < 0 || l.MaxInputs < 0 || l.MaxBytes < 0 || l.MaxTokens < 0 || l.MaxInputsPerRequest < 0 || l.MaxRequestTokens < 0 {
		return errors.New("batchapi: builder limits must not be negative (0 is the provider's default; MaxTokens 0 is no limit)")
	}
	return nil
}

// Builder writes one batch request file, one JSON line per request, and
// keeps it within its Limits. It writes through to w as requests are
// added, so a 200 MB file is never held in memory. It is not safe for
// concurrent use.
type Builder struct {
	cfg  BuilderConfig
	w    io.Writer
	ids  map[string]struct{}
	err  error // a failed write: the file is unusable
	line []byte

	requests, inputs, tokens int
	bytes                    int64
}

// NewBuilder returns a builder writing to w.
func NewBuilder(w io.Writer, cfg BuilderConfig) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Limits.applyDefaults()
	if cfg.Encoding == "" {
		cfg.Encoding = "base64"
	}
	if cfg.Counter == nil {
		cfg.Counter, _ = tokens.ForModel(cfg.Model)
	}
	return &Builder{cfg: cfg, w: w, ids: make(map[string]struct{})}, nil
}

// requestLine is one line of a request file.
type requestLine struct {
	CustomID string      `json:"custom_id"`
	Method   string      `json:"method"`
	URL      string      `json:"url"`
	Body     requestBody `json:"body"`
}

type requestBody struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// Add appends one embeddings request of inputs under customID, which the
// results will carry.
//
// Errors: ErrFileFull when the request would take the file past a limit
// (nothing is written: start the next file with it); a *LimitError
// matching ErrRequestTooLarge when the request alone exceeds a limit;
// ErrDuplicateCustomID; an error for an empty customID or no inputs; the
// writer's error, after which every Add fails.
func (b *Builder) Add(customID string, inputs []string) error {
	if b.err != nil {
		return b.err
	}
	if customID == "" || len(inputs) == 0 {
		return errors.New("batchapi: a request needs a custom_id and at least one input")
	}
	if _, dup := b.ids[customID]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateCustomID, customID)
	}
	n := tokens.Sum(b.cfg.Counter, inputs)
	line, err := b.encode(customID, inputs)
	if err != nil {
		return err
	}
	if err := b.fits(len(inputs), n, int64(len(line))); err != nil {
		return err
	}
	if _, err := b.w.Write(line); err != nil {
		b.err = fmt.Errorf("write batch file: %w", err)
		return b.err
	}
	b.ids[customID] = struct{}{}
	b.requests++
	b.inputs += len(inputs)
	b.tokens += n
	b.bytes += int64(len(line))
	return nil
}

// encode renders one request line, newline included, into b.line.
func (b *Builder) encode(customID string, inputs []string) ([]byte, error) {
	enc, err := encodeLine(customID, b.cfg.Model, b.cfg.Encoding, b.cfg.Dims, inputs)
	if err != nil {
		return nil, err
	}
	b.line = append(append(b.line[:0], enc...), '\n')
	return b.line, nil
}

func encodeLine(customID, model, encoding string, dims int, inputs []string) ([]byte, error) {
	enc, err := json.Marshal(requestLine{
		CustomID: customID, Method: "POST", URL: EndpointEmbeddings,
		Body: requestBody{Model: model, Input: inputs, EncodingFormat: encoding, Dimensions: dims},
	})
	if err != nil {
		return nil, fmt.Errorf("encode request %q: %w", customID, err)
	}
	return enc, nil
}

// LineSize is the bytes, newline included, of the request line a Builder
// of model, encoding and dims writes for customID and inputs: what the
// request takes of a file's byte limit.
func LineSize(customID, model, encoding string, dims int, inputs []string) (int64, error) {
	enc, err := encodeLine(customID, model, encoding, dims, inputs)
	return int64(len(enc)) + 1, err
}

// fits checks a request of inputs, tokens and size against the limits:
// alone first, then with what the file holds.
func (b *Builder) fits(inputs, toks int, size int64) error {
	l := b.cfg.Limits
	alone := []struct {
		name       string
		value, max int64
	}{
		{"inputs per request", int64(inputs), int64(l.MaxInputsPerRequest)},
		{"tokens per request", int64(toks), int64(l.MaxRequestTokens)},
		{"inputs", int64(inputs), int64(l.MaxInputs)},
		{"bytes", size, l.MaxBytes},
		{"tokens", int64(toks), int64(l.MaxTokens)},
	}
	for _, c := range alone {
		if c.max > 0 && c.value > c.max {
			return &LimitError{Limit: c.name, Value: c.value, Max: c.max}
		}
	}
	switch {
	case b.requests+1 > l.MaxRequests:
		return fmt.Errorf("%w: %d requests", ErrFileFull, b.requests)
	case b.inputs+inputs > l.MaxInputs:
		return fmt.Errorf("%w: %d inputs", ErrFileFull, b.inputs)
	case b.bytes+size > l.MaxBytes:
		return fmt.Errorf("%w: %d bytes", ErrFileFull, b.bytes)
	case l.MaxTokens > 0 && b.tokens+toks > l.MaxTokens:
		return fmt.Errorf("%w: %d tokens", ErrFileFull, b.tokens)
	}
	return nil
}

// Requests is how many requests the file holds.
func (b *Builder) Requests() int { return b.requests }

// Inputs is how many embedding inputs the file holds.
func (b *Builder) Inputs() int { return b.inputs }

// Tokens is how many input tokens the file holds, by the model's
// tokenizer.
func (b *Builder) Tokens() int { return b.tokens }

// Bytes is the file's size so far.
func (b *Builder) Bytes() int64 { return b.bytes }
