package batchapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// maxObjectBody bounds a JSON object answer (a batch, a list of 100).
const maxObjectBody = 16 << 20

// Client calls the Batch and Files APIs. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base string // the base URL ending in /v1
}

// New returns a client for cfg, after applying defaults and validating it.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	base := strings.TrimSuffix(strings.TrimRight(cfg.URL, "/"), "/v1") + "/v1"
	return &Client{cfg: cfg, base: base}, nil
}

// newRequest builds a request to path (under /v1) with the client's
// headers.
func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sluice-batchapi")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	return req, nil
}

// send sends req and returns the answer if it is 2xx; otherwise it closes
// the body and returns an *APIError for op.
func (c *Client) send(req *http.Request, op string) (*http.Response, error) {
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	se := statusError(resp.StatusCode, body)
	if d, ok := classify.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now(), c.cfg.MaxRetryAfter); ok {
		se.RetryAfter = d
	}
	return nil, &APIError{Op: op, Status: se}
}

// call sends a JSON call bounded by Config.Timeout and decodes its answer
// into out.
func (c *Client) call(ctx context.Context, method, path, op string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.send(req, op)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxObjectBody)).Decode(out); err != nil {
		return fmt.Errorf("%s: read answer: %w", op, err)
	}
	return nil
}

// errorObject is the provider's {"error": {...}} body, on a failed call
// and in a failed result line alike.
type errorObject struct {
	Error *struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// statusError reads an error body into the *classify.StatusError that
// pkg/classify maps, as the embedder does for the live endpoint.
func statusError(status int, body []byte) *classify.StatusError {
	var eo errorObject
	if json.Unmarshal(body, &eo) != nil || eo.Error == nil {
		return &classify.StatusError{StatusCode: status, Message: truncate(string(bytes.TrimSpace(body)))}
	}
	return eo.statusError(status)
}

// statusError is the *classify.StatusError of an error body.
func (eo errorObject) statusError(status int) *classify.StatusError {
	se := &classify.StatusError{StatusCode: status}
	if eo.Error == nil {
		return se
	}
	se.Message = truncate(eo.Error.Message)
	var code string
	if json.Unmarshal(eo.Error.Code, &code) == nil {
		se.APICode = code
	}
	return se
}

// maxMessage bounds StatusError.Message; provider messages can echo large
// parts of a request.
const maxMessage = 300

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "…"
}
