package embedsim

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// maxBatchErrors bounds the errors a failed validation reports.
const maxBatchErrors = 100

// validation is what validating an input file found.
type validation struct {
	model  string
	lines  []batchLine
	tokens int
	errors []batchError
}

// inputLine is one line of a batch input file.
type inputLine struct {
	CustomID *string         `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// validateBatchFile checks an input file as the provider does before a
// batch starts: every line a request to endpoint with a unique custom_id,
// one model, and the file within the limits. A request whose body the
// endpoint would refuse is not a validation error: it fails on its own
// line when the batch runs, as it would live.
func (s *Server) validateBatchFile(data []byte, endpoint string) validation {
	cfg := s.cfg.Batch
	var v validation
	lineErr := func(line int, code, param, msg string) {
		if len(v.errors) < maxBatchErrors {
			v.errors = append(v.errors, batchError{Code: code, Message: msg, Param: stringOrNil(param), Line: &line})
		}
	}
	if int64(len(data)) > cfg.MaxFileBytes {
		v.errors = []batchError{{Code: "file_too_large", Message: fmt.Sprintf("The input file is %d bytes, over the limit of %d bytes.", len(data), cfg.MaxFileBytes)}}
		return v
	}
	seen := make(map[string]int)
	inputs := 0
	var counter tokens.Counter
	n := 0
	for rest := data; len(rest) > 0; {
		var raw []byte
		raw, rest, _ = bytes.Cut(rest, []byte("\n"))
		n++
		if len(bytes.TrimSpace(raw)) == 0 && len(rest) == 0 {
			break // the final newline
		}
		var in inputLine
		if err := json.Unmarshal(raw, &in); err != nil {
			lineErr(n, "invalid_json_line", "", "This line is not parseable as valid JSON.")
			continue
		}
		switch {
		case in.CustomID == nil || *in.CustomID == "":
			lineErr(n, "missing_required_parameter", "custom_id", "Missing required parameter: 'custom_id'.")
			continue
		case in.Method != "POST":
			lineErr(n, "invalid_value", "method", fmt.Sprintf("Invalid value: %q. Supported values are: 'POST'.", in.Method))
			continue
		case in.URL != endpoint:
			lineErr(n, "url_mismatch", "url", fmt.Sprintf("The url %q of this request does not match the batch's endpoint %q.", in.URL, endpoint))
			continue
		case len(in.Body) == 0 || in.Body[0] != '{':
			lineErr(n, "missing_required_parameter", "body", "Missing required parameter: 'body'.")
			continue
		}
		if first, dup := seen[*in.CustomID]; dup {
			lineErr(n, "duplicate_custom_id", "custom_id", fmt.Sprintf(
				"The custom_id for this request is a duplicate of another request (line %d). The custom_id parameter must be unique for each request in a batch.", first))
			continue
		}
		seen[*in.CustomID] = n
		var body embeddingRequest
		_ = json.Unmarshal(in.Body, &body) // a bad body fails its line when run
		if v.model == "" {
			v.model = body.Model
			counter, _ = tokens.ForModel(v.model)
		} else if body.Model != v.model {
			lineErr(n, "model_mismatch", "body.model", fmt.Sprintf(
				"The model %q of this request does not match the model %q of the others. A batch can only use one model.", body.Model, v.model))
			continue
		}
		texts, _ := parseInput(body.Input)
		inputs += len(texts)
		v.tokens += tokens.Sum(counter, texts)
		v.lines = append(v.lines, batchLine{customID: *in.CustomID, body: in.Body})
	}
	switch {
	case len(v.errors) > 0:
	case n == 0 || len(v.lines) == 0:
		v.errors = []batchError{{Code: "empty_file", Message: "The input file is empty: it holds no requests."}}
	case len(v.lines) > cfg.MaxRequests:
		v.errors = []batchError{{Code: "too_many_tasks", Message: fmt.Sprintf("The input file holds %d requests, over the limit of %d requests per batch.", len(v.lines), cfg.MaxRequests)}}
	case endpoint == embeddingsEndpoint && inputs > cfg.MaxInputs:
		v.errors = []batchError{{Code: "too_many_tasks", Message: fmt.Sprintf("The input file holds %d embedding inputs, over the limit of %d inputs per batch.", inputs, cfg.MaxInputs)}}
	}
	return v
}
