package embedder

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/pkg/classify"
)

const (
	// maxErrorBody bounds how much of an error reply is read.
	maxErrorBody = 64 << 10
	// maxMessage bounds StatusError.Message; provider messages can echo
	// large parts of the request.
	maxMessage = 300
)

// blamedInputPattern finds the input a 400 reply names: OpenAI says
// "'$.input[3]' is invalid. …" or "Invalid 'input[3]': …".
var blamedInputPattern = regexp.MustCompile(`'(?:\$\.)?input\[(\d+)\]'`)

// BlamedInput returns the index of the input a 400 reply's message names,
// as the provider words it on the live endpoint and in a batch's error
// file alike.
func BlamedInput(se *classify.StatusError) (int, bool) {
	if se.StatusCode != http.StatusBadRequest {
		return 0, false
	}
	m := blamedInputPattern.FindStringSubmatch(se.Message)
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[1])
	return i, err == nil
}

// blamedInput returns the input, of n, that a 400 reply's message names.
func blamedInput(se *classify.StatusError, n int) (int, bool) {
	i, ok := BlamedInput(se)
	return i, ok && i < n
}

// statusError turns a non-2xx reply into a *classify.StatusError and the
// error's "param", which the auto encoding fallback keys off.
func statusError(resp *http.Response, now time.Time, maxRetryAfter time.Duration) (*classify.StatusError, string) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg, code, param := parseErrorBody(body)
	se := &classify.StatusError{
		StatusCode: resp.StatusCode,
		APICode:    code,
		Message:    truncate(msg, maxMessage),
	}
	if d, ok := retryAfter(resp.Header, now, maxRetryAfter); ok {
		se.RetryAfter = d
	}
	return se, param
}

// retryAfter prefers OpenAI's millisecond header, which is more precise
// than the standard one.
func retryAfter(h http.Header, now time.Time, maxDelay time.Duration) (time.Duration, bool) {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if f, err := strconv.ParseFloat(strings.TrimSpace(ms), 64); err == nil && f >= 0 && f < float64(365*24*time.Hour/time.Millisecond) {
			d := time.Duration(f * float64(time.Millisecond))
			if maxDelay > 0 && d > maxDelay {
				d = maxDelay
			}
			return d, true
		}
	}
	return classify.ParseRetryAfter(h.Get("Retry-After"), now, maxDelay)
}

// parseErrorBody reads the provider's {"error": {...}} body, and tolerates
// the shapes other OpenAI-compatible servers use: {"error": "text"}, a flat
// {"message", "type", "param", "code"} object, or no JSON at all.
func parseErrorBody(body []byte) (message, code, param string) {
	type errObject struct {
		Message string          `json:"message"`
		Param   json.RawMessage `json:"param"`
		Code    json.RawMessage `json:"code"`
	}
	var env struct {
		Error json.RawMessage `json:"error"`
		errObject
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return string(bytes.TrimSpace(body)), "", ""
	}
	obj := env.errObject
	if len(env.Error) > 0 {
		switch env.Error[0] {
		case '{':
			obj = errObject{}
			_ = json.Unmarshal(env.Error, &obj)
		case '"':
			_ = json.Unmarshal(env.Error, &obj.Message)
		}
	}
	return obj.Message, scalarText(obj.Code), scalarText(obj.Param)
}

// scalarText renders a JSON string or number as text; null and anything
// else become "".
func scalarText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw)
	}
	return ""
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
