package config

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// Embedder holds the embedding API settings.
type Embedder struct {
	// URL is the OpenAI-compatible API base. Defaults to a local embed-sim.
	URL string
	// Model is the model name. Defaults to embed-sim-1.
	Model string
	// APIKey is sent as a bearer token; never logged. Defaults to none.
	APIKey string
	// Encoding is base64, float or auto. Defaults to base64.
	Encoding string
	// Timeout bounds one embedding request. Defaults to 30s.
	Timeout time.Duration
	// BreakerDelay is how long the circuit breaker stays open. Defaults to 10s.
	BreakerDelay time.Duration
	// BreakerFailures is how many consecutive transient failures open the
	// breaker. Defaults to 5.
	BreakerFailures int
}

// Defaults of Embedder: a local embed-sim, and the embedder package's own
// timeout and breaker defaults.
const (
	DefaultEmbedderURL      = "http://127.0.0.1:8089"
	DefaultEmbedderModel    = "embed-sim-1"
	DefaultEmbedderEncoding = embedder.EncodingBase64
	DefaultEmbedderTimeout  = embedder.DefaultTimeout
	DefaultBreakerDelay     = embedder.DefaultBreakerDelay
	DefaultBreakerFailures  = embedder.DefaultFailureThreshold
)

// RegisterEmbedder registers the embedding API settings.
func RegisterEmbedder(l *Loader, e *Embedder) {
	l.String(&e.URL, "embedder-url", "EMBEDDER_URL", DefaultEmbedderURL, "OpenAI-compatible embeddings API base URL")
	l.String(&e.Model, "embedder-model", "EMBEDDER_MODEL", DefaultEmbedderModel, "embedding model name")
	l.String(&e.APIKey, "embedder-api-key", "EMBEDDER_API_KEY", "", "API key, sent as a bearer token")
	l.String(&e.Encoding, "embedder-encoding", "EMBEDDER_ENCODING", DefaultEmbedderEncoding, "encoding_format to request: base64, float or auto")
	l.Duration(&e.Timeout, "embedder-timeout", "EMBEDDER_TIMEOUT", DefaultEmbedderTimeout, "timeout of one embedding request")
	l.Duration(&e.BreakerDelay, "breaker-delay", "BREAKER_DELAY", DefaultBreakerDelay, "how long the circuit breaker stays open before a probe")
	l.Int(&e.BreakerFailures, "breaker-failures", "BREAKER_FAILURES", DefaultBreakerFailures, "consecutive transient failures that open the circuit breaker")
}

// Validate reports problems with the embedder settings.
func (e Embedder) Validate() error {
	var errs []error
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("EMBEDDER_URL %q: want http(s)://host[:port][/v1]", e.URL))
	}
	if e.Model == "" {
		errs = append(errs, errors.New("EMBEDDER_MODEL is empty: name the embedding model"))
	}
	switch e.Encoding {
	case embedder.EncodingBase64, embedder.EncodingFloat, embedder.EncodingAuto:
	default:
		errs = append(errs, fmt.Errorf("EMBEDDER_ENCODING %q: use base64, float or auto", e.Encoding))
	}
	if e.Timeout <= 0 || e.BreakerDelay <= 0 || e.BreakerFailures < 1 {
		errs = append(errs, errors.New("EMBEDDER_TIMEOUT, BREAKER_DELAY and BREAKER_FAILURES must be positive"))
	}
	return errors.Join(errs...)
}
