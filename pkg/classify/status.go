package classify

import (
	"net/http"
	"strconv"
	"time"
)

// apiCodeContextLength is the error.code OpenAI-compatible servers return
// for an input longer than the model's context.
const apiCodeContextLength = "context_length_exceeded"

// FromStatus classifies an HTTP error reply. apiCode is the machine-readable
// code of the error body, if any; retryAfter is the parsed Retry-After
// header, kept only when another attempt follows. Code is "http_<status>".
//
//   - 408: Retry, timeout.
//   - 425, 500, 502, 503, 504 and any other 5xx not listed below: Retry,
//     server_error. 425 (Too Early) is the server declining for its own
//     reasons, not a sign we send too fast.
//   - 429: Retry, rate_limited.
//   - 501 and 505: Ambiguous, server_error. The endpoint does not support
//     what we ask of it, which is a deployment fault shared by every chunk,
//     so it gets the bounded ambiguous budget rather than quarantine.
//   - 400: Quarantine, bad_request; 401 and 403: unauthorized; 404:
//     not_found; 413: payload_too_large; 422: unprocessable; any other 4xx:
//     bad_request. Whatever the 4xx, an apiCode of "context_length_exceeded"
//     makes the class context_length_exceeded.
//   - Anything else (1xx, 2xx, 3xx, nonsense): Ambiguous, unknown.
//
// A 4xx is only the fault of a single chunk when the request carried one
// input. A caller that sent a batch should bisect it, using IsDataError,
// rather than park the whole batch.
func FromStatus(status int, apiCode string, retryAfter time.Duration) Decision {
	d := Decision{Code: "http_" + strconv.Itoa(status)}
	switch {
	case status == http.StatusRequestTimeout:
		d.Disposition, d.Class = Retry, ClassTimeout
	case status == http.StatusTooManyRequests:
		d.Disposition, d.Class = Retry, ClassRateLimited
	case status == http.StatusTooEarly:
		d.Disposition, d.Class = Retry, ClassServerError
	case status == http.StatusNotImplemented || status == http.StatusHTTPVersionNotSupported:
		d.Disposition, d.Class = Ambiguous, ClassServerError
	case status >= 500 && status <= 599:
		d.Disposition, d.Class = Retry, ClassServerError
	case status >= 400 && status <= 499:
		d.Disposition, d.Class = Quarantine, clientErrorClass(status)
		if apiCode == apiCodeContextLength {
			d.Class = ClassContextLength
		}
	default:
		d.Disposition, d.Class = Ambiguous, ClassUnknown
	}
	if retriesFollow(d.Disposition) {
		d.RetryAfter = max(retryAfter, 0)
	}
	return d
}

func clientErrorClass(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return ClassUnauthorized
	case http.StatusNotFound:
		return ClassNotFound
	case http.StatusRequestEntityTooLarge:
		return ClassPayloadTooLarge
	case http.StatusUnprocessableEntity:
		return ClassUnprocessable
	}
	return ClassBadRequest
}
