package batchapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Config configures a Client.
type Config struct {
	// URL is the base URL of the API, with or without a trailing /v1, such
	// as "http://127.0.0.1:8089" or "https://api.openai.com/v1", as for
	// the embedder. Required.
	URL string
	// APIKey is sent as "Authorization: Bearer <key>". Defaults to none.
	APIKey string
	// HTTPClient sends the requests. Defaults to a client with its own
	// transport and no overall timeout: Timeout bounds the calls that
	// exchange small JSON objects, and the caller's context bounds
	// uploads and downloads, which can take minutes for a 200 MB file.
	HTTPClient *http.Client
	// Timeout bounds each call but UploadFile and FileContent, from the
	// request to the end of the answer. Defaults to 30 seconds.
	Timeout time.Duration
	// MaxRetryAfter caps the Retry-After kept in an *APIError. Defaults to
	// one minute.
	MaxRetryAfter time.Duration
}

const (
	defaultTimeout       = 30 * time.Second
	defaultMaxRetryAfter = time.Minute
)

func (c *Config) applyDefaults() {
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = defaultMaxRetryAfter
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
}

// Validate reports the first problem with c, saying how to fix it.
func (c Config) Validate() error {
	if c.URL == "" {
		return errors.New("batchapi: URL is required (the embedder's EMBEDDER_URL, e.g. http://127.0.0.1:8089)")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("batchapi: URL %q must be an absolute http(s) URL, e.g. http://127.0.0.1:8089", c.URL)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("batchapi: Timeout = %v, want a positive duration, or 0 for the default of %v", c.Timeout, defaultTimeout)
	}
	if c.MaxRetryAfter < 0 {
		return errors.New("batchapi: MaxRetryAfter must not be negative")
	}
	return nil
}
