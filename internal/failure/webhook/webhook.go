// Package webhook POSTs JSON events to an operator's receiver, retrying
// what the classifier calls transient (408, 425, 429, 5xx, network
// errors) with backoff and Retry-After, and never a refusal (other 4xx).
// Its errors never quote the URL's path or query, where receivers keep
// their token. The alerter and the quality report both send through it.
package webhook

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/pkg/classify"
)

// Config is a Client's receiver and retry budget.
type Config struct {
	// URL receives the events. Required.
	URL string
	// HTTPClient sends the requests. Defaults to a client with no overall
	// timeout of its own; Timeout bounds each attempt.
	HTTPClient *http.Client
	// Timeout bounds one attempt. Defaults to 5s.
	Timeout time.Duration
	// MaxRetries is how many times a failed POST is retried. Defaults to
	// 0: none.
	MaxRetries int
	// RetryDelay is the first delay between attempts, doubling (full
	// jitter) up to RetryMaxDelay; a Retry-After is the least delay.
	// Defaults to 250ms.
	RetryDelay time.Duration
	// RetryMaxDelay caps the delay between attempts. Defaults to 5s.
	RetryMaxDelay time.Duration
	// UserAgent names the sender. Defaults to "sluice".
	UserAgent string
}

// Defaults of Config.
const (
	DefaultTimeout       = 5 * time.Second
	DefaultRetryDelay    = 250 * time.Millisecond
	DefaultRetryMaxDelay = 5 * time.Second
)

// Reply is what one attempt got back: any HTTP status is a reply, not an
// error.
type Reply struct {
	Status     int
	RetryAfter time.Duration
}

// OK reports a 2xx reply.
func (r Reply) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Decision classifies one attempt: its error, or the status of a reply
// that was not a success; the zero Decision for a success.
func Decision(r Reply, err error) classify.Decision {
	switch {
	case err != nil:
		return classify.Classify(err)
	case r.OK():
		return classify.Decision{}
	}
	return classify.FromStatus(r.Status, "", r.RetryAfter)
}

// Retried reports whether an attempt that came to d is tried again: the
// receiver is overloaded, broken or unreachable (Retry), or failed in a
// way the classifier does not recognise (Ambiguous), rather than refusing
// the event.
func Retried(d classify.Decision) bool {
	return d.Disposition == classify.Retry || d.Disposition == classify.Ambiguous
}

// Client posts events to one receiver.
type Client struct {
	cfg  Config
	exec failsafe.Executor[Reply]
}

// New returns a client of cfg.
func New(cfg Config) *Client {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.RetryMaxDelay == 0 {
		cfg.RetryMaxDelay = max(DefaultRetryMaxDelay, cfg.RetryDelay)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "sluice"
	}
	backoff := classify.Backoff{Base: cfg.RetryDelay, Max: cfg.RetryMaxDelay}
	retry := retrypolicy.NewBuilder[Reply]().
		HandleIf(func(r Reply, err error) bool { return Retried(Decision(r, err)) }).
		WithMaxRetries(max(cfg.MaxRetries, 0)).
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[Reply]) time.Duration {
			d := Decision(exec.LastResult(), exec.LastError())
			return backoff.DelayAtLeast(exec.Retries()+1, d.RetryAfter)
		}).
		ReturnLastFailure().
		Build()
	return &Client{cfg: cfg, exec: failsafe.With[Reply](retry)}
}

// Post sends body under the idempotency key key, retrying as the package
// says, and returns the last reply. An error means the receiver could not
// be reached at all.
func (c *Client) Post(ctx context.Context, key string, body []byte) (Reply, error) {
	return c.exec.WithContext(ctx).Get(func() (Reply, error) { return c.attempt(ctx, key, body) })
}

func (c *Client) attempt(ctx context.Context, key string, body []byte) (Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Reply{}, config.RedactError(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return Reply{}, config.RedactError(err)
	}
	defer resp.Body.Close()
	// Draining a little lets the connection be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	r := Reply{Status: resp.StatusCode}
	if d, ok := classify.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now(), c.cfg.RetryMaxDelay); ok {
		r.RetryAfter = d
	}
	return r, nil
}
