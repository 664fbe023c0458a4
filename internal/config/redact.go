package config

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Redacted replaces the part of a URL that may hold a credential.
const Redacted = "…redacted"

// RedactURL keeps the scheme and host of a URL and replaces the rest —
// user info, path, query and fragment — with Redacted. Webhook URLs (Slack,
// Teams, Discord, most generic receivers) carry their credential in the
// path or query, so only the host is safe to log. A string that does not
// parse as an absolute URL is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Redacted
	}
	out := u.Scheme + "://" + u.Host
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		out += "/" + Redacted
	}
	return out
}

// RedactError returns err with the URL of the first *url.Error in its chain
// passed through RedactURL wherever err's message quotes it. Errors from
// net/http name the URL they failed on, so a webhook error logged as is
// leaks the webhook's token. The result unwraps to err, so errors.Is and
// errors.As still see the cause; only its message changes. Errors without
// a *url.Error are returned unchanged, nil included.
func RedactError(err error) error {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) || ue.URL == "" {
		return err
	}
	safe := RedactURL(ue.URL)
	msg := strings.ReplaceAll(err.Error(), strconv.Quote(ue.URL), strconv.Quote(safe))
	msg = strings.ReplaceAll(msg, ue.URL, safe)
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose message no longer holds a URL's secret.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }
