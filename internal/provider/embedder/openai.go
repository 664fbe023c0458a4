package embedder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Values of Config.Encoding.
const (
	// EncodingBase64 asks for base64 little-endian float32s: about a third
	// of the bytes of decimal floats, and no float parsing.
	EncodingBase64 = "base64"
	// EncodingFloat asks for JSON arrays of numbers.
	EncodingFloat = "float"
	// EncodingAuto asks for base64 and, if the server rejects the
	// encoding_format parameter, switches to float for the life of the
	// client.
	EncodingAuto = "auto"
)

// Config configures an OpenAI client.
type Config struct {
	// URL is the base URL of the API, with or without a trailing /v1, such
	// as "http://127.0.0.1:8089" or "https://api.openai.com/v1". The client
	// posts to <base>/v1/embeddings. Required.
	URL string
	// Model is the model to ask for, such as "text-embedding-3-small".
	// Required.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>". Defaults to none.
	APIKey string
	// Dims is the dimension to ask for (the "dimensions" parameter) and to
	// enforce on every vector. Defaults to 0: the parameter is not sent, and
	// the dimension of the first reply becomes the one enforced afterwards.
	Dims int
	// OmitDims leaves the dimensions parameter out of every request, for a
	// model that refuses it (text-embedding-ada-002; on vLLM and TEI, any
	// model not trained to shorten its vectors). Dims is still enforced on
	// every vector. Defaults to false: Dims is sent.
	OmitDims bool
	// Encoding is the encoding_format to ask for: EncodingBase64,
	// EncodingFloat or EncodingAuto. Defaults to EncodingBase64.
	Encoding string
	// HTTPClient sends the requests. Defaults to a client with its own
	// transport keeping up to 64 idle connections per host, and no overall
	// timeout: bound calls with the context, or wrap the client in
	// Resilient.
	HTTPClient *http.Client
	// MaxRetryAfter caps the Retry-After reported in StatusError. Defaults
	// to one minute.
	MaxRetryAfter time.Duration
	// MaxResponseBytes bounds the body of a successful reply; a larger one
	// fails the batch as a server error, having read no more than the
	// limit. Defaults to DefaultMaxResponseBytes (256 MiB).
	MaxResponseBytes int64
	// OnRateLimits, if set, is called with the provider's x-ratelimit-*
	// headers of every answer that has them, such as Budget.Observe. It
	// must not block. Defaults to nil.
	OnRateLimits func(RateLimits)
}

// DefaultMaxResponseBytes is the default Config.MaxResponseBytes: 2048
// inputs × 3072 dims as decimal floats is about 120 MiB.
const DefaultMaxResponseBytes = 256 << 20

const (
	defaultMaxRetryAfter = time.Minute
	defaultIdleConns     = 64
)

func (c *Config) applyDefaults() {
	if c.Encoding == "" {
		c.Encoding = EncodingBase64
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = defaultMaxRetryAfter
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = defaultIdleConns
		t.MaxIdleConnsPerHost = defaultIdleConns
		c.HTTPClient = &http.Client{Transport: t}
	}
}

// Validate reports the first problem with c, saying how to fix it.
func (c Config) Validate() error {
	if c.URL == "" {
		return errors.New("embedder: URL is required (set EMBEDDER_URL, e.g. http://127.0.0.1:8089)")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("embedder: URL %q must be an absolute http(s) URL, e.g. http://127.0.0.1:8089", c.URL)
	}
	if c.Model == "" {
		return errors.New("embedder: Model is required (set EMBEDDER_MODEL, e.g. text-embedding-3-small)")
	}
	if c.Dims < 0 {
		return fmt.Errorf("embedder: Dims = %d, want 0 (model default) or a positive dimension", c.Dims)
	}
	switch c.Encoding {
	case "", EncodingBase64, EncodingFloat, EncodingAuto:
	default:
		return fmt.Errorf("embedder: Encoding %q, want %q, %q or %q", c.Encoding, EncodingBase64, EncodingFloat, EncodingAuto)
	}
	if c.MaxRetryAfter < 0 {
		return errors.New("embedder: MaxRetryAfter must not be negative")
	}
	if c.MaxResponseBytes < 0 {
		return fmt.Errorf("embedder: MaxResponseBytes = %d, want a positive size, or 0 for the default of %d", c.MaxResponseBytes, DefaultMaxResponseBytes)
	}
	return nil
}

// endpoint resolves the embeddings URL from a base with or without /v1.
func endpoint(base string) string {
	base = strings.TrimRight(base, "/")
	base = strings.TrimSuffix(base, "/v1")
	return base + "/v1/embeddings"
}

// OpenAI is an Embedder speaking the OpenAI-compatible /v1/embeddings API.
// It makes exactly one HTTP request per Embed call (two when EncodingAuto
// falls back); retries and circuit breaking are Resilient's job.
type OpenAI struct {
	cfg      Config
	endpoint string
	header   http.Header
	dims     atomic.Int64
	useFloat atomic.Bool
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI returns a client for cfg, after applying defaults and
// validating it.
func NewOpenAI(cfg Config) (*OpenAI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	c := &OpenAI{cfg: cfg, endpoint: endpoint(cfg.URL), header: http.Header{}}
	c.header.Set("Content-Type", "application/json")
	c.header.Set("Accept", "application/json")
	c.header.Set("User-Agent", "sluice-embedder")
	if cfg.APIKey != "" {
		c.header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	c.dims.Store(int64(cfg.Dims))
	c.useFloat.Store(cfg.Encoding == EncodingFloat)
	return c, nil
}

// Model returns the configured model.
func (c *OpenAI) Model() string { return c.cfg.Model }

// Dims returns the enforced dimension: Config.Dims, or the dimension of the
// first reply when Config.Dims is 0 (0 until then).
func (c *OpenAI) Dims() int { return int(c.dims.Load()) }

// requestDims is the dimensions parameter to send: 0 sends none.
func (c *OpenAI) requestDims() int {
	if c.cfg.OmitDims {
		return 0
	}
	return c.cfg.Dims
}

// Encoding returns the encoding_format the client currently asks for,
// EncodingBase64 or EncodingFloat.
func (c *OpenAI) Encoding() string {
	if c.useFloat.Load() {
		return EncodingFloat
	}
	return EncodingBase64
}

// Embed implements Embedder.
//
// Errors: *InputError for an empty input (classify.ClassEmptyText, caught
// before any request), an unusable vector, or a 400 reply that names the
// input it rejects (wrapping its *classify.StatusError); *classify.StatusError for a
// non-2xx reply; a classify.Retryable(classify.ClassServerError) error
// matching ErrMalformedResponse for an unusable 2xx reply; otherwise the
// transport error, wrapped.
func (c *OpenAI) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	if len(inputs) == 0 {
		return [][]float32{}, nil
	}
	for i, in := range inputs {
		if in == "" {
			// Providers reject the whole batch for one empty input; naming it
			// here spares the caller a bisection.
			return nil, &InputError{Index: i, Err: classify.Permanent(classify.ClassEmptyText, errEmptyInput)}
		}
	}
	encoding := c.Encoding()
	vecs, param, err := c.do(ctx, inputs, encoding)
	var se *classify.StatusError
	if err != nil && c.cfg.Encoding == EncodingAuto && encoding == EncodingBase64 &&
		param == "encoding_format" && errors.As(err, &se) && se.StatusCode == http.StatusBadRequest {
		c.useFloat.Store(true)
		vecs, _, err = c.do(ctx, inputs, EncodingFloat)
	}
	if errors.As(err, &se) {
		if i, ok := blamedInput(se, len(inputs)); ok {
			return nil, &InputError{Index: i, Err: err}
		}
	}
	return vecs, err
}

// do sends one request. On a non-2xx reply it also returns the error's
// "param".
func (c *OpenAI) do(ctx context.Context, inputs []string, encoding string) ([][]float32, string, error) {
	body := newRequestBody(c.cfg.Model, inputs, c.requestDims(), encoding)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, body)
	if err != nil {
		_ = body.Close()
		return nil, "", fmt.Errorf("embeddings request: %w", err)
	}
	req.ContentLength = int64(body.Len())
	req.Header = c.header.Clone()
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("embeddings request: %w", err)
	}
	defer resp.Body.Close()
	if c.cfg.OnRateLimits != nil {
		if rl, ok := parseRateLimits(resp.Header); ok {
			c.cfg.OnRateLimits(rl)
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se, param := statusError(resp, time.Now(), c.cfg.MaxRetryAfter)
		return nil, param, se
	}
	vecs, err := c.decode(resp, len(inputs))
	return vecs, "", err
}

// decode reads a 2xx reply for n inputs.
func (c *OpenAI) decode(resp *http.Response, n int) ([][]float32, error) {
	d := getDecoder()
	defer putDecoder(d)
	var err error
	if d.body, err = readAll(d.body[:0], resp, c.cfg.MaxResponseBytes); err != nil {
		return nil, err
	}
	if err := d.parse(); err != nil {
		return nil, classify.Retryable(classify.ClassServerError, err)
	}
	want := int(c.dims.Load())
	vecs, dims, err := d.place(n, want)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, classify.Retryable(classify.ClassServerError, err)
	}
	if want == 0 {
		c.dims.CompareAndSwap(0, int64(dims))
	}
	return vecs, nil
}

// readAll reads the reply into buf, reusing its capacity, and refuses one
// over limit bytes without reading past it.
func readAll(buf []byte, resp *http.Response, limit int64) ([]byte, error) {
	tooLarge := func(size string) error {
		return classify.Retryable(classify.ClassServerError,
			malformed("reply of %s is over the limit of %d bytes: raise MaxResponseBytes to accept it", size, limit))
	}
	n := resp.ContentLength
	if n > limit {
		return buf, tooLarge(strconv.FormatInt(n, 10) + " bytes")
	}
	if n > 0 && int64(cap(buf)) < n+1 {
		buf = make([]byte, 0, n+1)
	}
	r := io.LimitReader(resp.Body, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, fmt.Errorf("read embeddings response: %w", err)
		}
	}
	if int64(len(buf)) > limit {
		return buf, tooLarge("more than " + strconv.FormatInt(limit, 10) + " bytes")
	}
	return buf, nil
}
