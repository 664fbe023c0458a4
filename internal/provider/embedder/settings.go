package embedder

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/internal/platform/config"
)

// Settings are the operator's settings of the embedding API, as flags and
// environment variables; Resilient and OpenAI are built from them.
type Settings struct {
	// URL is the OpenAI-compatible API base. Defaults to a local embed-sim.
	URL string
	// Model is the model name. Defaults to embed-sim-1.
	Model string
	// APIKey is sent as a bearer token; never logged. Defaults to none.
	APIKey string
	// Encoding is base64, float or auto. Defaults to base64.
	Encoding string
	// SendDims sends EMBEDDING_DIMS as the dimensions parameter. Defaults
	// to true; false for a model that refuses the parameter, whose vectors
	// must then have EMBEDDING_DIMS dimensions of their own.
	SendDims bool
	// Timeout bounds one embedding request. Defaults to 30s.
	Timeout time.Duration
	// BreakerDelay is how long the circuit breaker stays open. Defaults to 10s.
	BreakerDelay time.Duration
	// BreakerFailures is how many consecutive transient failures open the
	// breaker. Defaults to 5.
	BreakerFailures int
}

// Defaults of Settings: a local embed-sim; the timeout and breaker take
// DefaultTimeout, DefaultBreakerDelay and DefaultFailureThreshold.
const (
	DefaultURL      = "http://127.0.0.1:8089"
	DefaultModel    = "embed-sim-1"
	DefaultEncoding = EncodingBase64
)

// Register registers the embedding API settings with l.
func (e *Settings) Register(l *config.Loader) {
	l.String(&e.URL, "embedder-url", "EMBEDDER_URL", DefaultURL, "OpenAI-compatible embeddings API base URL")
	l.String(&e.Model, "embedder-model", "EMBEDDER_MODEL", DefaultModel, "embedding model name")
	l.String(&e.APIKey, "embedder-api-key", "EMBEDDER_API_KEY", "", "API key, sent as a bearer token")
	l.String(&e.Encoding, "embedder-encoding", "EMBEDDER_ENCODING", DefaultEncoding, "encoding_format to request: base64, float or auto")
	l.Bool(&e.SendDims, "embedder-send-dims", "EMBEDDER_SEND_DIMS", true, "send EMBEDDING_DIMS as the dimensions parameter; false for a model that refuses it (its vectors must have that size)")
	l.Duration(&e.Timeout, "embedder-timeout", "EMBEDDER_TIMEOUT", DefaultTimeout, "timeout of one embedding request")
	l.Duration(&e.BreakerDelay, "breaker-delay", "BREAKER_DELAY", DefaultBreakerDelay, "how long the circuit breaker stays open before a probe")
	l.Int(&e.BreakerFailures, "breaker-failures", "BREAKER_FAILURES", DefaultFailureThreshold, "consecutive transient failures that open the circuit breaker")
}

// Validate reports problems with the embedder settings.
func (e Settings) Validate() error {
	var errs []error
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("EMBEDDER_URL %q: want http(s)://host[:port][/v1]", e.URL))
	}
	if e.Model == "" {
		errs = append(errs, errors.New("EMBEDDER_MODEL is empty: name the embedding model"))
	}
	switch e.Encoding {
	case EncodingBase64, EncodingFloat, EncodingAuto:
	default:
		errs = append(errs, fmt.Errorf("EMBEDDER_ENCODING %q: use base64, float or auto", e.Encoding))
	}
	if e.Timeout <= 0 || e.BreakerDelay <= 0 || e.BreakerFailures < 1 {
		errs = append(errs, errors.New("EMBEDDER_TIMEOUT, BREAKER_DELAY and BREAKER_FAILURES must be positive"))
	}
	return errors.Join(errs...)
}

// Client is the Config of an OpenAI client for model at dims under these
// settings.
func (e Settings) Client(model string, dims int) Config {
	return Config{URL: e.URL, Model: model, APIKey: e.APIKey, Dims: dims, OmitDims: !e.SendDims, Encoding: e.Encoding}
}
