package bulk

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// Config configures the Ledger, Builder and Poller of one deployment; they
// must agree on it. The zero value of each optional field is its default.
type Config struct {
	// Model is the embedding model every request asks for. Required.
	Model string
	// Dims is the dimensions parameter, and the dimension every vector
	// read back must have. Defaults to 0: not sent, not checked.
	Dims int
	// Encoding is the requests' encoding_format, "base64" or "float".
	// Defaults to "base64".
	Encoding string
	// Limits bound one batch: the ledger seals a batch before a member
	// would take it past one. Defaults to the provider's
	// (batchapi.Limits); MaxTokens defaults to no limit.
	Limits batchapi.Limits
	// MaxAge is how long a batch stays open before it is sealed however
	// full it is. Defaults to DefaultMaxAge.
	MaxAge time.Duration
	// SliceSize is how many lines of an output or error file one
	// transaction applies. Defaults to DefaultSliceSize.
	SliceSize int
	// Interval spaces the passes of Builder.Run and Poller.Run. Defaults
	// to DefaultInterval.
	Interval time.Duration
	// Counter counts tokens as the provider does. Defaults to the model's
	// tokenizer (tokens.ForModel).
	Counter tokens.Counter
	// Spaces answers the embedding space of a later index generation
	// (above 1), whose batches ask for its model and dimension. Defaults
	// to nil: every generation is Model's at Dims.
	Spaces func(ctx context.Context, generation int) (Space, error)
}

// Space is an index generation's embedding space: what its requests ask
// for, and what its vectors must be.
type Space struct {
	Model string
	Dims  int
	// Counter counts the model's tokens. Defaults to tokens.ForModel.
	Counter tokens.Counter
}

// space returns generation gen's space: Config's for generation 1 or
// without Spaces.
func (c *Config) space(ctx context.Context, gen int) (Space, error) {
	if gen <= 1 || c.Spaces == nil {
		return Space{Model: c.Model, Dims: c.Dims, Counter: c.Counter}, nil
	}
	s, err := c.Spaces(ctx, gen)
	if err != nil {
		return Space{}, fmt.Errorf("the embedding space of generation %d: %w", gen, err)
	}
	if s.Counter == nil {
		s.Counter, _ = tokens.ForModel(s.Model)
	}
	return s, nil
}

// Defaults of Config.
const (
	// DefaultMaxAge lets a trickle of chunks wait at most ten minutes
	// before its batch is sent, in a 24-hour window.
	DefaultMaxAge = 10 * time.Minute
	// DefaultSliceSize keeps each apply transaction short.
	DefaultSliceSize = 500
	// DefaultInterval is the pace of polling: a batch takes minutes to
	// hours.
	DefaultInterval = 30 * time.Second
	// DefaultEncoding is a third of the bytes of floats.
	DefaultEncoding = "base64"
)

func (c *Config) applyDefaults() {
	l := &c.Limits
	setDefault(&l.MaxRequests, batchapi.DefaultMaxRequests)
	setDefault(&l.MaxInputs, batchapi.DefaultMaxInputs)
	setDefault(&l.MaxBytes, int64(batchapi.DefaultMaxBytes))
	setDefault(&l.MaxInputsPerRequest, batchapi.DefaultMaxInputsPerRequest)
	setDefault(&l.MaxRequestTokens, tokens.DefaultMaxRequestTokens)
	setDefault(&c.MaxAge, DefaultMaxAge)
	setDefault(&c.SliceSize, DefaultSliceSize)
	setDefault(&c.Interval, DefaultInterval)
	setDefault(&c.Encoding, DefaultEncoding)
	if c.Counter == nil {
		c.Counter, _ = tokens.ForModel(c.Model)
	}
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Validate says what is wrong with c and how to fix it.
func (c Config) Validate() error {
	var errs []error
	if c.Model == "" {
		errs = append(errs, errors.New("bulk: Model is required (the embedder's EMBEDDER_MODEL)"))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("bulk: MaxAge %s: use a positive duration, or 0 for the default (%s)", c.MaxAge, DefaultMaxAge))
	}
	if c.SliceSize < 0 {
		errs = append(errs, fmt.Errorf("bulk: SliceSize %d: use at least 1, or 0 for the default (%d)", c.SliceSize, DefaultSliceSize))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("bulk: Interval %s: use a positive duration, or 0 for the default (%s)", c.Interval, DefaultInterval))
	}
	if err := (batchapi.BuilderConfig{Model: c.Model, Dims: c.Dims, Encoding: c.Encoding, Limits: c.Limits}).Validate(); c.Model != "" && err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Deps are what the Ledger, Builder and Poller work with.
type Deps struct {
	// Log receives a line per batch that moves, and failures; never chunk
	// text. Defaults to zerolog.Nop().
	Log *zerolog.Logger
	// Metrics counts what they do. Defaults to metrics registered
	// nowhere.
	Metrics *Metrics
	// Now is the clock of the ledger's timestamps and of sealing by age.
	// Defaults to time.Now.
	Now func() time.Time
	// Crash is called at each named crash point (the Crash* constants);
	// an error stops the step there, as if the process had been killed.
	// For crash tests. Defaults to none.
	Crash func(point string) error
}

func (d *Deps) applyDefaults() {
	if d.Log == nil {
		nop := zerolog.Nop()
		d.Log = &nop
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Crash == nil {
		d.Crash = func(string) error { return nil }
	}
}

// crash calls the crash hook at point; an error it returns stops the
// whole pass, as the kill it stands for would.
func (d *Deps) crash(point string) error {
	if err := d.Crash(point); err != nil {
		return &crashError{point: point, err: err}
	}
	return nil
}

// crashError is a crash hook's error: the pass stops where it is.
type crashError struct {
	point string
	err   error
}

func (e *crashError) Error() string { return "crash point " + e.point + ": " + e.err.Error() }
func (e *crashError) Unwrap() error { return e.err }

// crashed reports whether err stops the pass.
func crashed(err error) bool {
	var c *crashError
	return errors.As(err, &c)
}

// Crash points, where Deps.Crash is called.
const (
	// CrashBuilt: the builder wrote the request file, before uploading.
	CrashBuilt = "built"
	// CrashUploaded: the file is at the provider, not yet recorded.
	CrashUploaded = "uploaded"
	// CrashCreateRequested: the ledger records that it will create the
	// batch, before asking.
	CrashCreateRequested = "create-requested"
	// CrashCreated: the provider created the batch, not yet recorded.
	CrashCreated = "created"
	// CrashPolled: the poller has the provider's status, not yet
	// recorded.
	CrashPolled = "polled"
	// CrashSliceApplied: a slice of a file was applied and committed.
	CrashSliceApplied = "slice-applied"
	// CrashApplied: every file was applied, before the batch settles.
	CrashApplied = "applied"
)
