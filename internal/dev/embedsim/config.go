package embedsim

import (
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// MaxDims is the largest dimension the server will produce.
const MaxDims = 16384

// Config configures a Server. The zero value is a healthy server with the
// defaults below.
type Config struct {
	// Dims is the dimension used when a request does not ask for one.
	// Defaults to 384.
	Dims int
	// Model is the model name reported by GET /v1/models. Requests may name
	// any model; replies echo it. Defaults to "embed-sim-1".
	Model string
	// APIKey, when set, is required as "Authorization: Bearer <key>";
	// requests without it get 401. Defaults to no authentication.
	APIKey string
	// DisableBase64 makes the server reject encoding_format "base64" with
	// 400 (param "encoding_format"), like providers that only speak floats.
	DisableBase64 bool
	// RefuseDims makes the server reject any dimensions parameter with
	// 400, as OpenAI does for text-embedding-ada-002 and vLLM for a model
	// not trained to shorten its vectors; vectors have Dims dimensions.
	RefuseDims bool
	// Faults scripts misbehaviour. Defaults to none.
	Faults Faults
	// Seed seeds the generator behind random faults and latency, so that a
	// run is reproducible. Defaults to 0, itself a fixed seed.
	Seed uint64
	// RecordInputs keeps the text of every input in the request log, for
	// tests. Defaults to false: only SHA-256 digests are kept.
	RecordInputs bool
	// MaxRecords bounds how many requests Server.Requests remembers; older
	// ones are dropped. Counts and Seen are not bounded by it. Defaults to
	// 10000; negative keeps none.
	MaxRecords int
	// MaxRequestBytes bounds a request body; a larger one is answered 413
	// without being read further. Defaults to DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxInputTokens is the model's context length: an input of more
	// tokens, counted with the requested model's tokenizer
	// (tokens.ForModel, as the client counts), is answered 400
	// context_length_exceeded. Defaults to tokens.DefaultMaxInputTokens;
	// negative is no limit.
	MaxInputTokens int
	// MaxRequestTokens caps the tokens of one request's inputs together;
	// more is answered 400 max_tokens_per_request. Defaults to
	// tokens.DefaultMaxRequestTokens; negative is no limit.
	MaxRequestTokens int
	// Quota is the organisation's rate limit, shared by every client, and
	// reported in x-ratelimit-* headers on every embeddings answer.
	// Defaults to none: unlimited, and no headers.
	Quota Quota
	// Batch configures the Batch and Files APIs: phase timing, the
	// provider's limits, the enqueued-token quota, output order and batch
	// faults. Defaults to the provider's limits and a batch that runs in
	// seconds.
	Batch BatchConfig
}

// DefaultMaxRequestBytes is the default Config.MaxRequestBytes (64 MiB);
// real providers cap far lower.
const DefaultMaxRequestBytes = 64 << 20

const (
	defaultDims       = 384
	defaultModel      = "embed-sim-1"
	defaultMaxRecords = 10000
)

func (c *Config) applyDefaults() {
	if c.Dims == 0 {
		c.Dims = defaultDims
	}
	if c.Model == "" {
		c.Model = defaultModel
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = defaultMaxRecords
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxInputTokens == 0 {
		c.MaxInputTokens = tokens.DefaultMaxInputTokens
	}
	if c.MaxRequestTokens == 0 {
		c.MaxRequestTokens = tokens.DefaultMaxRequestTokens
	}
	c.Batch.applyDefaults()
}

// Validate reports the first problem with c, after defaults, saying how to
// fix it.
func (c Config) Validate() error {
	c.applyDefaults()
	if c.Dims < 1 || c.Dims > MaxDims {
		return fmt.Errorf("embedsim: dims = %d, want 1..%d", c.Dims, MaxDims)
	}
	if c.MaxRequestBytes < 0 {
		return fmt.Errorf("embedsim: max request bytes = %d, want a positive size, or 0 for the default of %d", c.MaxRequestBytes, DefaultMaxRequestBytes)
	}
	if err := c.Quota.Validate(); err != nil {
		return fmt.Errorf("embedsim: %w", err)
	}
	if err := c.Faults.Validate(); err != nil {
		return fmt.Errorf("embedsim: %w", err)
	}
	if err := c.Batch.Validate(); err != nil {
		return fmt.Errorf("embedsim: %w", err)
	}
	return nil
}

// Option adjusts a Server's collaborators.
type Option func(*options)

type options struct {
	registry   *prometheus.Registry
	logger     zerolog.Logger
	requestLog io.Writer
	now        func() time.Time
}

// WithRegistry registers the server's metrics in reg and serves reg on
// /metrics. Defaults to a fresh registry.
func WithRegistry(reg *prometheus.Registry) Option {
	return func(o *options) { o.registry = reg }
}

// WithLogger sets the logger. Defaults to zerolog.Nop(). Input text is never
// logged.
func WithLogger(l zerolog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithRequestLog appends every request, once answered, to w as one JSON
// object per line. Writes are serialised; w is not closed by the server.
func WithRequestLog(w io.Writer) Option {
	return func(o *options) { o.requestLog = w }
}

// WithClock sets the clock used for the outage window, the request log,
// and the phases of batches.
// Defaults to time.Now. Latency and hangs always use real time.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}
