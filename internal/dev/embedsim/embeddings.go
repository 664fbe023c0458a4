package embedsim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/provider/tokens"

	"github.com/sluicehq/sluice/pkg/messages"
)

type embeddingRequest struct {
	Model string `json:"model"`
	// Input is decoded along with the rest, in one pass: a string or an
	// array, as the API allows, checked by parseInput. Decoding it as raw
	// bytes and again as strings scanned every input four times, which
	// made rejected requests (a poisoned batch is sent once per bad
	// input) a large share of embed-sim's CPU.
	Input          any    `json:"input"`
	Dimensions     int    `json:"dimensions"`
	EncodingFormat string `json:"encoding_format"`
}

// outcome is what the fault script decided for one request.
type outcome struct {
	status int // 200 means embed
	fault  string
	hang   bool // stall for HangFor before carrying on
	reset  bool // drop the connection without answering
	apiErr apiError
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status, fault, rec := s.answer(w, r)
	d := time.Since(start)
	s.metrics.observe(status, fault, d)
	s.log.finish(rec, status, fault, d)
	s.logger.Debug().Int("status", status).Str("fault", fault).Dur("duration", d).Msg("embeddings request")
}

// answer handles one request and reports the status sent (0 for none), the
// fault that decided it, and its log record.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) (int, string, *record) {
	req, inputs, aerr := s.parseRequest(w, r)
	// Every request is recorded, rejected ones too: a drill counting what
	// reached the provider must see them.
	rec := s.log.begin(s.now(), inputs)
	s.metrics.inputs.Add(float64(len(inputs)))
	if s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		e := apiError{Message: "Incorrect API key provided.", Type: typeInvalidRequest, Code: "invalid_api_key"}
		return writeError(w, http.StatusUnauthorized, e, 0), "", rec
	}
	if aerr != nil {
		return writeError(w, cmp.Or(aerr.status, http.StatusBadRequest), *aerr, 0), "", rec
	}
	used, aerr := s.countTokens(req.Model, inputs)
	s.log.setTokens(rec, used)
	if aerr != nil {
		if s.quota.limited() {
			s.quota.peek(s.now()).set(w.Header())
		}
		return writeError(w, http.StatusBadRequest, *aerr, 0), aerr.fault, rec
	}
	if s.quota.limited() {
		h, wait := s.quota.take(used, s.now())
		h.set(w.Header())
		if wait > 0 {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt((wait+time.Millisecond-1).Milliseconds(), 10))
			return writeError(w, http.StatusTooManyRequests, quotaError(req.Model, h, used, wait), int(math.Ceil(wait.Seconds()))), "quota", rec
		}
	}

	fs := s.faults.Load()
	o, latency := s.decide(fs, inputs)
	if !wait.Sleep(r.Context(), latency, nil) {
		return 0, o.fault, rec
	}
	if o.reset {
		resetConnection(w)
		return 0, o.fault, rec
	}
	if o.hang && !wait.Sleep(r.Context(), fs.HangFor, nil) {
		return 0, o.fault, rec
	}
	if o.status != http.StatusOK {
		return writeError(w, o.status, o.apiErr, fs.RetryAfterSeconds), o.fault, rec
	}
	poison, fault, aerr := inputFaults(fs, req.Model, inputs)
	if aerr != nil {
		return writeError(w, http.StatusBadRequest, *aerr, 0), fault, rec
	}
	if fault == "" {
		fault = o.fault
	}
	dims := req.Dimensions
	if dims == 0 {
		dims = s.cfg.Dims
	}
	s.writeEmbeddings(w, req.Model, inputs, used, dims, req.EncodingFormat == "base64", poison)
	return http.StatusOK, fault, rec
}

// parseRequest decodes and checks a request. The inputs are returned
// whenever they could be read, even if another field is invalid.
func (s *Server) parseRequest(w http.ResponseWriter, r *http.Request) (*embeddingRequest, []string, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, nil, &apiError{
			Message: fmt.Sprintf("the request body is over the limit of %d bytes: send fewer inputs per request, or raise MaxRequestBytes", tooLarge.Limit),
			Type:    typeInvalidRequest, status: http.StatusRequestEntityTooLarge,
		}
	}
	if err != nil {
		return nil, nil, &apiError{Message: "could not read the request body: " + err.Error(), Type: typeInvalidRequest}
	}
	return s.decodeRequest(body)
}

// decodeRequest decodes and checks the body of an embeddings request, a
// live one or one line of a batch. The inputs are returned whenever they
// could be read, even if another field is invalid.
func (s *Server) decodeRequest(body []byte) (*embeddingRequest, []string, *apiError) {
	var req embeddingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, &apiError{Message: "We could not parse the JSON body of your request: " + err.Error(), Type: typeInvalidRequest}
	}
	inputs, err := parseInput(req.Input)
	if err != nil {
		return nil, nil, &apiError{Message: err.Error(), Type: typeInvalidRequest, Param: "input"}
	}
	if req.Model == "" {
		return nil, inputs, &apiError{Message: "you must provide a model parameter", Type: typeInvalidRequest, Param: "model"}
	}
	if req.Dimensions < 0 || req.Dimensions > MaxDims {
		return nil, inputs, &apiError{Message: fmt.Sprintf("dimensions must be between 1 and %d", MaxDims), Type: typeInvalidRequest, Param: "dimensions"}
	}
	if req.Dimensions > 0 && s.cfg.RefuseDims {
		return nil, inputs, &apiError{Message: "This model does not support specifying dimensions.", Type: typeInvalidRequest, Param: "dimensions"}
	}
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		if s.cfg.DisableBase64 {
			return nil, inputs, &apiError{Message: "Unsupported encoding_format 'base64': only 'float' is supported", Type: typeInvalidRequest, Param: "encoding_format"}
		}
	default:
		return nil, inputs, &apiError{Message: fmt.Sprintf("Invalid value for 'encoding_format': %q; supported values are 'float' and 'base64'", req.EncodingFormat), Type: typeInvalidRequest, Param: "encoding_format"}
	}
	return &req, inputs, nil
}

func parseInput(input any) ([]string, error) {
	switch v := input.(type) {
	case nil:
		return nil, errors.New("'input' is a required property")
	case string:
		return []string{v}, nil
	case []any:
		if len(v) == 0 {
			return nil, errors.New("'$.input' is invalid: the array must not be empty")
		}
		many := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, errNotStrings
			}
			many[i] = s
		}
		return many, nil
	default:
		return nil, errNotStrings
	}
}

var errNotStrings = errors.New("'$.input' is invalid: embed-sim accepts a string or an array of strings (no token arrays)")

// decide draws the request-level outcome. Sequences advance first, on every
// request, so that "503,503,200" always means "the third request carrying
// this input succeeds" whatever else was injected.
func (s *Server) decide(fs *faultSet, inputs []string) (outcome, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	step := s.advanceSequences(fs, inputs)
	latency := fs.Latency.sample(s.rng)
	switch {
	case s.inOutage(fs, s.now()):
		return statusOutcome(http.StatusServiceUnavailable, "outage"), latency
	case step == stepReset:
		return outcome{reset: true, fault: "sequence"}, latency
	case step == stepHang:
		return outcome{status: http.StatusOK, hang: true, fault: "sequence"}, latency
	case step != http.StatusOK:
		return statusOutcome(step, "sequence"), latency
	}
	switch {
	case s.draw(fs.RateReset):
		return outcome{reset: true, fault: "reset"}, latency
	case s.draw(fs.RateHang):
		return outcome{status: http.StatusOK, hang: true, fault: "hang"}, latency
	case s.draw(fs.Rate429):
		return statusOutcome(http.StatusTooManyRequests, "rate_429"), latency
	case s.draw(fs.Rate5xx):
		codes := [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}
		return statusOutcome(codes[s.rng.IntN(len(codes))], "rate_5xx"), latency
	}
	return outcome{status: http.StatusOK}, latency
}

// draw reports a hit with probability p. Requires s.mu.
func (s *Server) draw(p float64) bool {
	return p > 0 && s.rng.Float64() < p
}

// advanceSequences moves every matching input one step along its sequence
// and returns the first failing step, or 200. Requires s.mu.
func (s *Server) advanceSequences(fs *faultSet, inputs []string) int {
	result := http.StatusOK
	if len(fs.sequences) == 0 {
		return result
	}
	var done []seqKey // an input repeated within one request advances once
	for _, in := range inputs {
		for ri, rule := range fs.sequences {
			if !rule.match.matches(in) {
				continue
			}
			key := seqKey{rule: ri, text: fnvString(in)}
			if containsKey(done, key) {
				continue
			}
			done = append(done, key)
			pos := s.seqPos[key]
			s.seqPos[key] = pos + 1
			step := rule.steps[min(pos, len(rule.steps)-1)]
			if result == http.StatusOK && step != http.StatusOK {
				result = step
			}
		}
	}
	return result
}

func containsKey(keys []seqKey, k seqKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// inputFaults applies the per-input rules of a request naming model:
// rejections come back as an API error, corruptions as one PoisonKind per
// input (nil when none).
func inputFaults(fs *faultSet, model string, inputs []string) ([]PoisonKind, string, *apiError) {
	var kinds []PoisonKind
	for i, in := range inputs {
		if fs.MaxInputChars > 0 {
			if n := utf8.RuneCountInString(in); n > fs.MaxInputChars {
				e := charsContextError(fs.MaxInputChars, n)
				return nil, "context_length", &e
			}
		}
		for _, p := range fs.poison {
			if (p.model != "" && p.model != model) || !p.match.matches(in) {
				continue
			}
			switch p.kind {
			case PoisonInvalidInput:
				return nil, "invalid_input", &apiError{
					Message: fmt.Sprintf("'$.input[%d]' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", i),
					Type:    typeInvalidRequest, Param: "input", Code: "invalid_input",
				}
			case PoisonContextLength:
				e := charsContextError(fs.MaxInputChars, utf8.RuneCountInString(in))
				return nil, "context_length", &e
			default:
				if kinds == nil {
					kinds = make([]PoisonKind, len(inputs))
				}
				kinds[i] = p.kind
			}
		}
	}
	if kinds == nil {
		return nil, "", nil
	}
	for _, k := range kinds {
		if k != "" {
			return kinds, string(k), nil
		}
	}
	return kinds, "", nil
}

// charsContextError is contextLengthError for a limit in characters, as
// the MaxInputChars fault sets it; tokens are approximated as four
// characters each.
func charsContextError(maxChars, chars int) apiError {
	maxTokens := maxChars / 4
	if maxTokens == 0 {
		maxTokens = 8192
	}
	return contextLengthError(maxTokens, max((chars+3)/4, maxTokens+1))
}

// contextLengthError is the provider's answer to an input of tokens
// tokens for a context of maxTokens.
func contextLengthError(maxTokens, tokens int) apiError {
	return apiError{
		Message: fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens (%d in your prompt; 0 for the completion). Please reduce your prompt; or completion length.", maxTokens, tokens, tokens),
		Type:    typeInvalidRequest,
		Param:   "input",
		Code:    "context_length_exceeded",
	}
}

// resetConnection drops the TCP connection without a response; with linger
// 0 the peer sees a reset rather than a clean close, like a crashing load
// balancer.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the stream instead.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	out := messages.AppendJSONString([]byte(`{"object":"list","data":[{"id":`), s.cfg.Model)
	_, _ = w.Write(append(out, `,"object":"model","created":0,"owned_by":"embed-sim"}]}`+"\n"...))
}

// countTokens counts the inputs' tokens with the model's tokenizer, as a
// provider does before it embeds anything, and checks them against the
// context length and the request cap. Tokenizing costs several times what
// embedding does here, so the server counts exactly only when the count
// decides something: under a token quota, or when the inputs are long
// enough in bytes to reach a limit (no token is shorter than a byte).
// Otherwise the count, which is only reported, is tokens.Approximate's.
func (s *Server) countTokens(model string, inputs []string) (int, *apiError) {
	var counter tokens.Counter = tokens.Approximate{}
	if s.mustCount(inputs) {
		counter, _ = tokens.ForModel(model)
	}
	total := 0
	for _, in := range inputs {
		n := counter.Count(in)
		if s.cfg.MaxInputTokens > 0 && n > s.cfg.MaxInputTokens {
			e := contextLengthError(s.cfg.MaxInputTokens, n)
			e.fault = "context_length"
			return total + n, &e
		}
		total += n
	}
	if s.cfg.MaxRequestTokens > 0 && total > s.cfg.MaxRequestTokens {
		return total, &apiError{
			Message: fmt.Sprintf("Requested %d tokens, max %d tokens per request", total, s.cfg.MaxRequestTokens),
			Type:    codeMaxTokensPerRequest, Code: codeMaxTokensPerRequest, fault: codeMaxTokensPerRequest,
		}
	}
	return total, nil
}

// mustCount reports whether the inputs' exact count decides anything.
func (s *Server) mustCount(inputs []string) bool {
	if s.cfg.Quota.TokensPerMinute > 0 {
		return true
	}
	size := 0
	for _, in := range inputs {
		if s.cfg.MaxInputTokens > 0 && len(in) > s.cfg.MaxInputTokens {
			return true
		}
		size += len(in)
	}
	return s.cfg.MaxRequestTokens > 0 && size > s.cfg.MaxRequestTokens
}

// codeMaxTokensPerRequest is the type and code of the provider's answer
// to a request past its token cap.
const codeMaxTokensPerRequest = "max_tokens_per_request"
