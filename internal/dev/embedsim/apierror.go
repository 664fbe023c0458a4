package embedsim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error types of the provider's error body.
const (
	typeInvalidRequest = "invalid_request_error"
	typeRateLimit      = "rate_limit_error"
	typeServer         = "server_error"
)

// apiError is the provider's error object. Param and Code are null when
// empty, as in the real API.
type apiError struct {
	Message string
	Type    string
	Param   string
	Code    string
	// status is the HTTP status to answer with; 0 means 400.
	status int
	// fault is the request log's name for the rule that refused the
	// request, if any.
	fault string
}

// MarshalJSON writes empty Param and Code as null, as the provider does.
func (e apiError) MarshalJSON() ([]byte, error) {
	type wire struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	w := wire{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		w.Param = &e.Param
	}
	if e.Code != "" {
		w.Code = &e.Code
	}
	return json.Marshal(w)
}

// statusOutcome is a request-level failure with the body a provider would
// send for that status.
func statusOutcome(status int, fault string) outcome {
	e := apiError{Type: typeInvalidRequest, Message: http.StatusText(status)}
	switch {
	case status == http.StatusTooManyRequests:
		e = apiError{
			Message: "Rate limit reached for requests. Please try again in 1s.",
			Type:    typeRateLimit, Code: "rate_limit_exceeded",
		}
	case status == http.StatusServiceUnavailable:
		e = apiError{Message: "The engine is currently overloaded, please try again later.", Type: typeServer}
	case status >= 500:
		e = apiError{Message: "The server had an error while processing your request. Sorry about that!", Type: typeServer}
	}
	return outcome{status: status, fault: fault, apiErr: e}
}

// writeError sends the error body and returns status. retryAfterSeconds is
// sent on 429s when positive.
func writeError(w http.ResponseWriter, status int, e apiError, retryAfterSeconds int) int {
	body, err := json.Marshal(struct {
		Error apiError `json:"error"`
	}{e})
	if err != nil {
		http.Error(w, http.StatusText(status), status)
		return status
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests && retryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return status
}
