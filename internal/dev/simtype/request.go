package simtype

import "time"

// RequestRecord is what embed-sim remembers of one embeddings request.
type RequestRecord struct {
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Inputs is the number of inputs in the request.
	Inputs int `json:"inputs"`
	// InputSHA256 holds the hex SHA-256 of each input, in request order.
	InputSHA256 []string `json:"input_sha256"`
	// Texts holds the inputs themselves, only when embed-sim records inputs
	// (embedsim.Config.RecordInputs).
	Texts []string `json:"texts,omitempty"`
	// Tokens is the inputs' tokens, up to the first input over the
	// context length: by the model's tokenizer when the count decided
	// anything (a token quota, inputs long enough to reach a limit), else
	// estimated; 0 for a request that could not be read.
	Tokens int `json:"tokens"`
	// Status is the HTTP status answered; 0 when no answer was sent (the
	// connection was reset, or the client left during a hang).
	Status int `json:"status"`
	// Fault names the injected fault that decided the answer, if any:
	// outage, rate_429, rate_5xx, hang, reset, sequence, invalid_input,
	// context_length, max_tokens_per_request, wrong_dims, nan.
	Fault string `json:"fault,omitempty"`
	// Duration is how long embed-sim took to answer.
	Duration time.Duration `json:"duration_ns"`
}

// RequestsFor is the answer of GET /debug/requests?input_sha256=H: the
// remembered requests that carried the input whose SHA-256 is H, oldest
// first.
type RequestsFor struct {
	InputSHA256 string          `json:"input_sha256"`
	Requests    []RequestRecord `json:"requests"`
}
