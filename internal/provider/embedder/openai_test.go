package embedder_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
)

// simClient starts an embedsim with faults and a client for it.
func simClient(t *testing.T, faults embedsim.Faults, cfg embedder.Config) (*embedsim.Server, *embedder.OpenAI) {
	t.Helper()
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 32, Faults: faults})
	cfg.URL = sim.URL()
	if cfg.Model == "" {
		cfg.Model = "m"
	}
	if cfg.Dims == 0 {
		cfg.Dims = 32
	}
	return sim, newOpenAI(t, cfg)
}

func statusErr(t *testing.T, err error) *classify.StatusError {
	t.Helper()
	var se *classify.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a *classify.StatusError", err, err)
	}
	return se
}

func inputErr(t *testing.T, err error) *embedder.InputError {
	t.Helper()
	var ie *embedder.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v (%T), want an *embedder.InputError", err, err)
	}
	return ie
}

func TestRateLimitedCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	_, c := simClient(t, embedsim.Faults{Rate429: 1, RetryAfterSeconds: 3}, embedder.Config{})
	_, err := c.Embed(context.Background(), []string{"x"})
	se := statusErr(t, err)
	if se.StatusCode != 429 || se.APICode != "rate_limit_exceeded" || se.RetryAfter != 3*time.Second {
		t.Errorf("StatusError %+v, want 429 rate_limit_exceeded RetryAfter 3s", se)
	}
	if d := classify.Classify(err); d.Disposition != classify.Retry || d.Class != classify.ClassRateLimited || d.RetryAfter != 3*time.Second {
		t.Errorf("classified %+v", d)
	}
}

func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	_, c := simClient(t, embedsim.Faults{Rate429: 1, RetryAfterSeconds: 600}, embedder.Config{MaxRetryAfter: 5 * time.Second})
	_, err := c.Embed(context.Background(), []string{"x"})
	if se := statusErr(t, err); se.RetryAfter != 5*time.Second {
		t.Errorf("RetryAfter %v, want the 5s cap", se.RetryAfter)
	}
}

func TestContextLengthExceeded(t *testing.T) {
	t.Parallel()
	_, c := simClient(t, embedsim.Faults{MaxInputChars: 100}, embedder.Config{})
	_, err := c.Embed(context.Background(), []string{"short", strings.Repeat("long ", 30)})
	se := statusErr(t, err)
	if se.StatusCode != 400 || se.APICode != "context_length_exceeded" || !strings.Contains(se.Message, "maximum context length") {
		t.Errorf("StatusError %+v", se)
	}
	if d := classify.Classify(err); d.Disposition != classify.Quarantine || d.Class != classify.ClassContextLength {
		t.Errorf("classified %+v, want quarantine context_length_exceeded", d)
	}
}

func TestServerErrorIsRetryable(t *testing.T) {
	t.Parallel()
	_, c := simClient(t, embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: "x", Sequence: "503"}}}, embedder.Config{})
	_, err := c.Embed(context.Background(), []string{"x"})
	if se := statusErr(t, err); se.StatusCode != 503 {
		t.Errorf("status %d", se.StatusCode)
	}
	if !classify.IsRetryable(err) {
		t.Errorf("503 not retryable: %+v", classify.Classify(err))
	}
}

func TestWrongDimensionBlamesTheInput(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{embedder.EncodingBase64, embedder.EncodingFloat} {
		_, c := simClient(t, embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "odd", Kind: embedsim.PoisonWrongDims}}}, embedder.Config{Encoding: enc})
		_, err := c.Embed(context.Background(), []string{"fine", "fine too", "the odd one"})
		ie := inputErr(t, err)
		if ie.Index != 2 {
			t.Errorf("%s: InputError.Index = %d, want 2", enc, ie.Index)
		}
		if d := classify.Classify(err); d.Disposition != classify.Quarantine || d.Class != classify.ClassDimensionMismatch {
			t.Errorf("%s: classified %+v", enc, d)
		}
		if !classify.IsDataError(err) {
			t.Errorf("%s: not a data error", enc)
		}
	}
}

func TestNaNBlamesTheInput(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{embedder.EncodingBase64, embedder.EncodingFloat} {
		_, c := simClient(t, embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "nan", Kind: embedsim.PoisonNaN}}}, embedder.Config{Encoding: enc})
		_, err := c.Embed(context.Background(), []string{"a nan here", "fine"})
		if ie := inputErr(t, err); ie.Index != 0 {
			t.Errorf("%s: Index %d, want 0", enc, ie.Index)
		}
		if d := classify.Classify(err); d.Disposition != classify.Quarantine || d.Class != classify.ClassInvalidVector {
			t.Errorf("%s: classified %+v", enc, d)
		}
	}
}

func TestEmptyInputNeverSent(t *testing.T) {
	t.Parallel()
	sim, c := simClient(t, embedsim.Faults{}, embedder.Config{})
	_, err := c.Embed(context.Background(), []string{"a", "", "c"})
	if ie := inputErr(t, err); ie.Index != 1 || classify.Classify(err).Class != classify.ClassEmptyText {
		t.Errorf("err %v", err)
	}
	if n := sim.Counts().Requests; n != 0 {
		t.Errorf("server received %d requests, want 0", n)
	}
}

func TestAutoFallsBackToFloatOnce(t *testing.T) {
	t.Parallel()
	sim := embedsim.StartTest(t, embedsim.Config{DisableBase64: true})
	c := newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m", Encoding: embedder.EncodingAuto})
	if c.Encoding() != embedder.EncodingBase64 {
		t.Fatalf("auto starts with %s, want base64", c.Encoding())
	}
	for i := range 3 {
		if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if c.Encoding() != embedder.EncodingFloat {
		t.Errorf("Encoding() = %s after the server rejected base64, want float", c.Encoding())
	}
	if n := sim.Counts().Requests; n != 4 {
		t.Errorf("server received %d requests, want 4 (one rejected base64, then floats)", n)
	}

	// Without auto, the rejection is the caller's to see.
	strict := newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m"})
	_, err := strict.Embed(context.Background(), []string{"x"})
	if se := statusErr(t, err); se.StatusCode != 400 {
		t.Errorf("strict base64: %+v", se)
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	sim := embedsim.StartTest(t, embedsim.Config{APIKey: "sk-test"})
	good := newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m", APIKey: "sk-test"})
	if _, err := good.Embed(context.Background(), []string{"x"}); err != nil {
		t.Errorf("with the key: %v", err)
	}
	bad := newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m", APIKey: "sk-wrong"})
	_, err := bad.Embed(context.Background(), []string{"x"})
	if se := statusErr(t, err); se.StatusCode != 401 || se.APICode != "invalid_api_key" {
		t.Errorf("with a wrong key: %+v", se)
	}
	if strings.Contains(err.Error(), "sk-wrong") {
		t.Error("the error message leaks the API key")
	}
}

func TestDimsLearntFromFirstReply(t *testing.T) {
	t.Parallel()
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 48})
	c := newOpenAI(t, embedder.Config{URL: sim.URL() + "/v1", Model: "m"})
	if c.Dims() != 0 {
		t.Fatalf("Dims() before any reply = %d, want 0", c.Dims())
	}
	vecs, err := c.Embed(context.Background(), []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Dims() != 48 || len(vecs[1]) != 48 {
		t.Errorf("Dims() = %d, len = %d, want 48", c.Dims(), len(vecs[1]))
	}
}

// A model that refuses the dimensions parameter is asked without it, and
// its vectors are still held to Dims.
func TestOmitDimsSendsNoneAndStillEnforcesDims(t *testing.T) {
	t.Parallel()
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 48, RefuseDims: true})
	url := sim.URL() + "/v1"
	if _, err := newOpenAI(t, embedder.Config{URL: url, Model: "m", Dims: 48}).Embed(context.Background(), []string{"x"}); classify.Classify(err).Class != classify.ClassBadRequest {
		t.Fatalf("dimensions sent to a model that refuses them: %v, want a bad request", err)
	}
	vecs, err := newOpenAI(t, embedder.Config{URL: url, Model: "m", Dims: 48, OmitDims: true}).Embed(context.Background(), []string{"x", "y"})
	if err != nil || len(vecs[1]) != 48 {
		t.Fatalf("without the parameter: %d vectors, %v; want 48 dimensions", len(vecs), err)
	}
	_, err = newOpenAI(t, embedder.Config{URL: url, Model: "m", Dims: 32, OmitDims: true}).Embed(context.Background(), []string{"x"})
	if classify.Classify(err).Class != classify.ClassDimensionMismatch {
		t.Fatalf("48 dimensions where 32 are wanted: %v, want a dimension mismatch", err)
	}
}

func TestInputsArriveIntact(t *testing.T) {
	t.Parallel()
	sim, c := simClient(t, embedsim.Faults{}, embedder.Config{})
	inputs := []string{"plain", "quote \" backslash \\ slash /", "ctrl \x00\x01\x1f\n\r\t", "naïve 東京 🚀", "\u2028\u2029", "bad utf8 \xff\xfe"}
	if _, err := c.Embed(context.Background(), inputs); err != nil {
		t.Fatal(err)
	}
	got := sim.Requests()[0].Texts
	want := append(inputs[:len(inputs)-1:len(inputs)-1], "bad utf8 \ufffd\ufffd")
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("input %d arrived as %q, want %q", i, got[i], want[i])
		}
	}
}

func TestConnectionResetIsRetryable(t *testing.T) {
	t.Parallel()
	_, c := simClient(t, embedsim.Faults{RateReset: 1}, embedder.Config{})
	_, err := c.Embed(context.Background(), []string{"x"})
	if err == nil {
		t.Fatal("no error from a reset connection")
	}
	if d := classify.Classify(err); d.Disposition != classify.Retry || d.Class != classify.ClassConnection {
		t.Errorf("classified %+v (%v), want retry connection", d, err)
	}
}

// replyWith serves a fixed 2xx body.
func replyWith(t *testing.T, body string) *embedder.OpenAI {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return newOpenAI(t, embedder.Config{URL: srv.URL, Model: "m", Dims: 2})
}

func TestMalformedRepliesAreRetryable(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":        `<html>bad gateway</html>`,
		"truncated":       `{"data":[{"index":0,"embedding":[1,0]}`,
		"no data":         `{"object":"list"}`,
		"too few":         `{"data":[{"index":0,"embedding":[1,0]}]}`,
		"duplicate index": `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}]}`,
		"index too big":   `{"data":[{"index":0,"embedding":[1,0]},{"index":2,"embedding":[0,1]}]}`,
		"no index":        `{"data":[{"embedding":[1,0]},{"index":1,"embedding":[0,1]}]}`,
		"bad base64":      `{"data":[{"index":0,"embedding":"!!!!"},{"index":1,"embedding":[0,1]}]}`,
		"odd base64":      `{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAA="}]}`,
		"null embedding":  `{"data":[{"index":0,"embedding":null},{"index":1,"embedding":[0,1]}]}`,
		"string number":   `{"data":[{"index":0,"embedding":["1",0]},{"index":1,"embedding":[0,1]}]}`,
		"trailing":        `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1]}]} {}`,
		"deep nesting":    `{"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `,"data":[]}`,
	} {
		_, err := replyWith(t, body).Embed(context.Background(), []string{"a", "b"})
		if !errors.Is(err, embedder.ErrMalformedResponse) {
			t.Errorf("%s: err = %v, want ErrMalformedResponse", name, err)
			continue
		}
		if d := classify.Classify(err); d.Disposition != classify.Retry || d.Class != classify.ClassServerError {
			t.Errorf("%s: classified %+v, want retry server_error", name, d)
		}
	}
}

func TestRepliesArePlacedByIndex(t *testing.T) {
	t.Parallel()
	// Out of order, extra fields, odd whitespace, an escaped base64 slash,
	// and a float array where base64 was asked for.
	body := "{ \"object\" : \"list\", \"usage\": {\"prompt_tokens\": 2, \"nested\": [1, {\"a\": null}]},\n" +
		"\"data\": [ {\"embedding\": [0.5, -0.25], \"index\": 1, \"object\": \"embedding\"},\n" +
		"{\"object\":\"embedding\",\"index\":0,\"embedding\":\"AACAP\\/\\/\\/fz8=\"} ], \"model\": \"m\\u0021\" }"
	vecs, err := replyWith(t, body).Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if vecs[0][0] != 1 || vecs[0][1] != 0.99999994 || vecs[1][0] != 0.5 || vecs[1][1] != -0.25 {
		t.Errorf("vectors %v", vecs)
	}
}

func TestStatusErrorMessageIsTruncated(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"` + long + `","type":"invalid_request_error","param":null,"code":400}}`))
	}))
	t.Cleanup(srv.Close)
	_, err := newOpenAI(t, embedder.Config{URL: srv.URL, Model: "m"}).Embed(context.Background(), []string{"x"})
	se := statusErr(t, err)
	if len(se.Message) > 310 || !strings.HasPrefix(long, strings.TrimSuffix(se.Message, "…")) {
		t.Errorf("message of %d bytes: %q", len(se.Message), se.Message)
	}
	if se.APICode != "400" {
		t.Errorf("numeric code became %q, want \"400\"", se.APICode)
	}
}

func TestErrorBodyShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, msg, code string }{
		{`{"error":{"message":"m1","code":"c1"}}`, "m1", "c1"},
		{`{"error":"plain text error"}`, "plain text error", ""},
		{`{"object":"error","message":"m3","type":"BadRequestError","param":null,"code":400}`, "m3", "400"},
		{`upstream connect error`, "upstream connect error", ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(tc.body))
		}))
		_, err := newOpenAI(t, embedder.Config{URL: srv.URL, Model: "m"}).Embed(context.Background(), []string{"x"})
		srv.Close()
		if se := statusErr(t, err); se.Message != tc.msg || se.APICode != tc.code || se.StatusCode != 502 {
			t.Errorf("%s: %+v", tc.body, se)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  embedder.Config
		want string
	}{
		{embedder.Config{Model: "m"}, "URL is required"},
		{embedder.Config{URL: "127.0.0.1:8089", Model: "m"}, "absolute http(s) URL"},
		{embedder.Config{URL: "http://x"}, "Model is required"},
		{embedder.Config{URL: "http://x", Model: "m", Dims: -1}, "Dims"},
		{embedder.Config{URL: "http://x", Model: "m", Encoding: "hex"}, "Encoding"},
		{embedder.Config{URL: "http://x", Model: "m", MaxRetryAfter: -1}, "MaxRetryAfter"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error mentioning %q", tc.cfg, err, tc.want)
		}
	}
	if err := (embedder.Config{URL: "https://api.openai.com/v1", Model: "m"}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// A reply over MaxResponseBytes fails the batch with an error naming the
// limit and the setting, whether the server announces its length or
// streams it.
func TestResponseOverLimit(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, embedder.ErrMalformedResponse) || !classify.IsRetryable(err) {
			t.Fatalf("err = %v; want a retryable malformed response", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "limit of 1024 bytes") || !strings.Contains(msg, "MaxResponseBytes") {
			t.Errorf("error %q does not name the limit and MaxResponseBytes", msg)
		}
	}
	t.Run("announced length", func(t *testing.T) {
		t.Parallel()
		_, c := simClient(t, embedsim.Faults{}, embedder.Config{Encoding: embedder.EncodingFloat, MaxResponseBytes: 1024})
		inputs := strings.Fields("one two three four five six seven eight nine ten eleven twelve")
		_, err := c.Embed(context.Background(), inputs)
		check(t, err)
		_, roomy := simClient(t, embedsim.Faults{}, embedder.Config{Encoding: embedder.EncodingFloat, MaxResponseBytes: 64 << 10})
		if _, err := roomy.Embed(context.Background(), inputs); err != nil {
			t.Fatalf("the same reply under a higher limit: %v", err)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[`))
			for i := 0; i < 1000 && r.Context().Err() == nil; i++ {
				_, _ = w.Write([]byte(strings.Repeat(" ", 1024)))
				w.(http.Flusher).Flush()
			}
		}))
		t.Cleanup(srv.Close)
		c, err := embedder.NewOpenAI(embedder.Config{URL: srv.URL, Model: "m", MaxResponseBytes: 1024})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Embed(context.Background(), []string{"x"})
		check(t, err)
	})
}

func TestRejectionNamingAnInputBlamesThatInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status  int
		message string
		blamed  int // -1: no input blamed
	}{
		{400, `'$.input[2]' is invalid. Please check the API reference.`, 2},
		{400, `Invalid 'input[0]': string too long.`, 0},
		{400, `'$.input' is invalid. Please check the API reference.`, -1},
		{400, `'$.input[3]' is invalid.`, -1}, // only three inputs: not one of them
		{500, `'$.input[1]' is invalid.`, -1},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":"invalid_input"}}`, tc.message)
		}))
		_, err := newOpenAI(t, embedder.Config{URL: srv.URL, Model: "m"}).Embed(context.Background(), []string{"a", "b", "c"})
		srv.Close()
		var ie *embedder.InputError
		switch blamed := errors.As(err, &ie); {
		case tc.blamed < 0 && blamed:
			t.Errorf("%d %q blamed input %d; want no input blamed", tc.status, tc.message, ie.Index)
		case tc.blamed >= 0 && (!blamed || ie.Index != tc.blamed):
			t.Errorf("%d %q: error %v; want input %d blamed", tc.status, tc.message, err, tc.blamed)
		}
		if se := statusErr(t, err); se.StatusCode != tc.status {
			t.Errorf("%q: the status error is lost: %+v", tc.message, se)
		}
	}
}
