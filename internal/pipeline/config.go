package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Config tunes the pipeline.
type Config struct {
	// MaxDeliveries is the delivery cap: a transient failure on this
	// delivery parks the job as transient_exhausted. It must equal the
	// broker topology's MaxDeliveries. Defaults to 5.
	MaxDeliveries int
	// AmbiguousRetries is how many times an unrecognised error is retried
	// before the job is parked as ambiguous_exhausted. Defaults to 2.
	AmbiguousRetries int
	// MaxReplays is how many replay generations a chunk gets before it is
	// quarantined as replay_exhausted. Defaults to 3.
	MaxReplays int
	// EmbedMaxInputs bounds the inputs of one embedding request. Defaults
	// to 64.
	EmbedMaxInputs int
	// EmbedMaxBytes bounds the summed input size of one embedding request.
	// Defaults to 512 KiB.
	EmbedMaxBytes int
	// Backoff spaces redeliveries of transient failures. Defaults to
	// classify.Backoff{Base: 1s, Max: 2m}.
	Backoff classify.Backoff
	// ParkRetryDelay is how long after parking a transient_exhausted chunk
	// the replayer may try it, doubled per replay generation. Defaults to 30s.
	ParkRetryDelay time.Duration
	// Model names the embedding model recorded with each vector. Defaults
	// to the embedder's.
	Model string
}

func (c *Config) applyDefaults() {
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = 5
	}
	if c.AmbiguousRetries == 0 {
		c.AmbiguousRetries = 2
	}
	if c.MaxReplays == 0 {
		c.MaxReplays = 3
	}
	if c.EmbedMaxInputs == 0 {
		c.EmbedMaxInputs = 64
	}
	if c.EmbedMaxBytes == 0 {
		c.EmbedMaxBytes = 512 << 10
	}
	if c.Backoff.Base == 0 {
		c.Backoff = classify.Backoff{Base: time.Second, Max: 2 * time.Minute, Rand: c.Backoff.Rand}
	}
	if c.ParkRetryDelay == 0 {
		c.ParkRetryDelay = 30 * time.Second
	}
}

// Validate reports settings that would break the guarantees.
func (c Config) Validate() error {
	c.applyDefaults()
	var errs []error
	if c.MaxDeliveries < 1 {
		errs = append(errs, fmt.Errorf("max deliveries %d: use at least 1", c.MaxDeliveries))
	}
	if c.AmbiguousRetries < 0 || c.AmbiguousRetries >= c.MaxDeliveries {
		errs = append(errs, fmt.Errorf("ambiguous retries %d: use 0..%d (below max deliveries)", c.AmbiguousRetries, c.MaxDeliveries-1))
	}
	if c.EmbedMaxInputs < 1 || c.EmbedMaxBytes < 1 {
		errs = append(errs, errors.New("embed request bounds must be positive"))
	}
	return errors.Join(errs...)
}
