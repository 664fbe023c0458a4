package config

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Redacted replaces the part of a URL that may hold a credential.
const Redacted = "…redacted"

// Masked replaces a password, token or other credential that Redact hides
// in a connection string whose shape it keeps.
const Masked = "xxxxx"

// Redact hides the credentials in a connection string, for error messages
// and logs, and fails closed: what it cannot read is hidden whole.
//
// In a URL it masks the password, the user when there is no password (a
// NATS token, a Git token), the value of every query parameter whose name
// says it holds a credential (password, passwd, pwd, sslpassword, token,
// secret, and any name with pass, pwd, secret, token, key, auth,
// credential or sig in it) and the fragment. In a key=value string
// (host=db password=secret, as libpq reads it) it masks the same
// keywords' values. A URL that does not parse keeps only its scheme, and
// anything else that is not empty becomes Redacted.
func Redact(raw string) string {
	switch {
	case strings.TrimSpace(raw) == "":
		return raw
	case !strings.Contains(raw, "://") && strings.Contains(raw, "="):
		return redactKeywords(raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		if scheme, _, ok := strings.Cut(raw, "://"); ok && scheme != "" && strings.IndexFunc(scheme, notSchemeRune) < 0 {
			return scheme + "://" + Redacted
		}
		return Redacted
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Masked)
		} else {
			u.User = url.User(Masked)
		}
	}
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Masked, ""
	}
	return u.String()
}

// notSchemeRune reports a rune that no URL scheme holds (RFC 3986 §3.1).
func notSchemeRune(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')
}

// credentialName reports whether a query parameter or keyword may name a
// credential. It errs on the side of masking: a masked sslkey path costs
// nothing, a printed password does.
func credentialName(name string) bool {
	name = strings.ToLower(name)
	for _, part := range []string{"pass", "pwd", "secret", "token", "key", "auth", "credential", "sig"} {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// redactQuery masks the values of a raw query's credential parameters,
// and any pair it cannot unescape.
func redactQuery(raw string) string {
	pairs := strings.Split(raw, "&")
	for i, pair := range pairs {
		k, v, hasValue := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		switch {
		case err != nil:
			pairs[i] = Masked
		case !hasValue:
			if credentialName(name) {
				pairs[i] = Masked
			}
		default:
			if _, err := url.QueryUnescape(v); err != nil || credentialName(name) {
				pairs[i] = k + "=" + Masked
			}
		}
	}
	return strings.Join(pairs, "&")
}

// redactKeywords masks the credential values of a key=value connection
// string, read as libpq reads one: pairs separated by white space, a value
// bare or in single quotes, a backslash escaping the next character. A
// string that does not read so is replaced whole.
func redactKeywords(raw string) string {
	var out []string
	for s := trimSpace(raw); s != ""; s = trimSpace(s) {
		i := strings.IndexAny(s, "= \t\n\r\f\v")
		if i <= 0 {
			return Redacted
		}
		key := s[:i]
		s = trimSpace(s[i:])
		if !strings.HasPrefix(s, "=") {
			return Redacted
		}
		s = trimSpace(s[1:])
		n, ok := keywordValueLen(s)
		if !ok {
			return Redacted
		}
		value := s[:n]
		if credentialName(key) {
			value = Masked
		}
		out = append(out, key+"="+value)
		s = s[n:]
	}
	return strings.Join(out, " ")
}

// keywordValueLen returns the length of the value at the start of s: up
// to the closing quote of a quoted value, else up to white space.
func keywordValueLen(s string) (int, bool) {
	quoted := strings.HasPrefix(s, "'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i == len(s) {
				return 0, false
			}
		case quoted && c == '\'' && i > 0:
			return i + 1, true
		case !quoted && isSpace(c):
			return i, true
		}
	}
	return len(s), !quoted
}

func trimSpace(s string) string {
	for s != "" && isSpace(s[0]) {
		s = s[1:]
	}
	return s
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

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
