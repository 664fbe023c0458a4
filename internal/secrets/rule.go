package secrets

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Rule names, as reported in Match.Rule and Finding.Rule.
const (
	RulePrivateKey         = "private_key"
	RuleAWSAccessKeyID     = "aws_access_key_id"
	RuleAWSSecretAccessKey = "aws_secret_access_key"
	RuleGCPServiceAccount  = "gcp_service_account"
	RuleGitHubToken        = "github_token"
	RuleSlackToken         = "slack_token"
	RuleSlackWebhook       = "slack_webhook"
	RuleDiscordWebhook     = "discord_webhook"
	RuleTeamsWebhook       = "teams_webhook"
	RuleStripeKey          = "stripe_key"
	RuleOpenAIKey          = "openai_api_key"
	RuleJWT                = "jwt"
	RulePassword           = "password_assignment"
)

// rule is one kind of secret.
type rule struct {
	name string
	// re matches the secret; it is anchored at the literal when back is 0.
	re *regexp.Regexp
	// literals are substrings of which every match contains one, starting
	// at most back bytes after the match's start; a match never ends more
	// than reach bytes after its literal. The pattern is tried only around
	// them, so that its cost follows the number of candidates, not the
	// length of the text.
	literals    []string
	back, reach int
	// wordStart requires the match not to follow a letter, digit or
	// underscore: a leading \b, checked against the whole text.
	wordStart bool
	// head, when set, matches the first bytes of every match; it is tried
	// on headBytes bytes first, so that a literal common in prose ("pass",
	// "sk-") is dismissed without running re over its whole reach.
	head *regexp.Regexp
	// span turns a submatch index slice into the secret's span, or reports
	// a near miss. Nil means the whole match is the secret.
	span func(text string, loc []int) (start, end int, ok bool)
}

// headBytes is the most a rule's head pattern sees.
const headBytes = 64

// spec is how a rule is written.
type spec struct {
	name        string
	pattern     string
	literals    []string
	back, reach int
	wordStart   bool
	head        string
	span        func(text string, loc []int) (start, end int, ok bool)
}

// compile builds the rules. A pattern whose literal starts every match
// (back is 0) is anchored, so each candidate costs one anchored attempt.
func compile(specs []spec) []rule {
	out := make([]rule, len(specs))
	for i, s := range specs {
		pattern := s.pattern
		if s.back == 0 {
			pattern = `\A(?:` + pattern + `)`
		}
		out[i] = rule{
			name: s.name, re: regexp.MustCompile(pattern), literals: s.literals,
			back: s.back, reach: s.reach, wordStart: s.wordStart, span: s.span,
		}
		if s.head != "" {
			out[i].head = regexp.MustCompile(`\A(?:` + s.head + `)`)
		}
	}
	return out
}

// Rules lists the names of every rule Scan applies, in the order Scan
// tries them.
func Rules() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

var rules = compile([]spec{
	{
		name:     RulePrivateKey,
		pattern:  `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`,
		literals: []string{"-----BEGIN "},
		reach:    128,
		span:     privateKeySpan,
	},
	{
		name:      RuleAWSAccessKeyID,
		pattern:   `(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}\b`,
		literals:  []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA"},
		reach:     32,
		wordStart: true,
	},
	{
		name:     RuleAWSSecretAccessKey,
		pattern:  `(?i)aws_?(?:secret_?(?:access_?)?key|sk)["']?[ \t]*(?::=|=>|[:=])[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`,
		literals: []string{"aws", "AWS", "Aws"},
		reach:    128,
		head:     `(?i)aws_?(?:secret|sk)`,
		span:     firstGroup(nil),
	},
	{
		name:     RuleGCPServiceAccount,
		pattern:  `"private_key"\s*:\s*"(-----BEGIN[^"]{64,})"`,
		literals: []string{`"private_key"`},
		reach:    16 << 10,
		span:     firstGroup(nearClientEmail),
	},
	{
		name:      RuleGitHubToken,
		pattern:   `(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{50,240})\b`,
		literals:  []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		reach:     256,
		wordStart: true,
	},
	{
		name:      RuleSlackToken,
		pattern:   `xox[baprs]-[0-9]+-[A-Za-z0-9-]{10,}`,
		literals:  []string{"xox"},
		reach:     512,
		wordStart: true,
	},
	{
		name:     RuleSlackWebhook,
		pattern:  `https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{16,}`,
		literals: []string{"https://hooks.slack.com/"},
		reach:    512,
	},
	{
		name:     RuleDiscordWebhook,
		pattern:  `https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{20,}`,
		literals: []string{"https://discord", "https://canary.discord", "https://ptb.discord"},
		reach:    512,
	},
	{
		name:     RuleTeamsWebhook,
		pattern:  `https://[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{20,}|https://[A-Za-z0-9.-]+\.logic\.azure\.com(?::[0-9]+)?/workflows/[^\s"'<>]*sig=[A-Za-z0-9_%-]{16,}`,
		literals: []string{".webhook.office.com/", ".logic.azure.com"},
		back:     128,
		reach:    2048,
	},
	{
		name:      RuleStripeKey,
		pattern:   `[sr]k_live_[A-Za-z0-9]{20,}\b`,
		literals:  []string{"sk_live_", "rk_live_"},
		reach:     256,
		wordStart: true,
	},
	{
		name:      RuleOpenAIKey,
		pattern:   `sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}`,
		literals:  []string{"sk-"},
		reach:     512,
		head:      `sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32}`,
		wordStart: true,
		span:      wholeIf(lettersAndDigits),
	},
	{
		name:      RuleJWT,
		pattern:   `eyJ[A-Za-z0-9_-]{8,}={0,2}\.[A-Za-z0-9_-]{8,}={0,2}\.[A-Za-z0-9_-]{16,}={0,2}`,
		literals:  []string{"eyJ"},
		reach:     16 << 10,
		wordStart: true,
		span:      wholeIf(jsonHeader),
	},
	{
		name: RulePassword,
		pattern: `(?i)(?:password|passwd|pwd)["']?[ \t]*(?::=|=>|[:=])[ \t]*` +
			`(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'<>,;&]+))`,
		literals: []string{"pass", "PASS", "Pass", "pwd", "PWD", "Pwd"},
		reach:    1024,
		head:     `(?i)(?:password|passwd|pwd)["']?[ \t]*(?::=|=>|[:=])`,
		span:     passwordSpan,
	},
})

// privateKeySpan extends a BEGIN line to the END line that closes it, or
// to the end of the text: a key cut short is still a key.
func privateKeySpan(text string, loc []int) (int, int, bool) {
	if end := pemEnd.FindStringIndex(text[loc[1]:]); end != nil {
		return loc[0], loc[1] + end[1], true
	}
	return loc[0], len(text), true
}

var pemEnd = regexp.MustCompile(`-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)

// firstGroup returns a span function that reports the pattern's first
// group, once check (when not nil) accepts it.
func firstGroup(check func(text string, start, end int) bool) func(string, []int) (int, int, bool) {
	return func(text string, loc []int) (int, int, bool) {
		s, e := loc[2], loc[3]
		if s < 0 || (check != nil && !check(text, s, e)) {
			return 0, 0, false
		}
		return s, e, true
	}
}

// wholeIf returns a span function that reports the whole match when ok
// accepts its text.
func wholeIf(ok func(s string) bool) func(string, []int) (int, int, bool) {
	return func(text string, loc []int) (int, int, bool) {
		return loc[0], loc[1], ok(text[loc[0]:loc[1]])
	}
}

// gcpWindow is how far from a private key a service-account key file's
// client_email may be: the file is a small flat object.
const gcpWindow = 4 << 10

// nearClientEmail reports whether a "client_email" field is close enough
// to the key at [start, end) to belong to the same JSON object.
func nearClientEmail(text string, start, end int) bool {
	lo, hi := max(0, start-gcpWindow), min(len(text), end+gcpWindow)
	return strings.Contains(text[lo:hi], `"client_email"`)
}

// lettersAndDigits rejects runs like sk-this-is-a-long-hyphenated-name
// that no key generator produces.
func lettersAndDigits(s string) bool {
	return strings.ContainsAny(s, "0123456789") && strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// jsonHeader reports whether the first dot-separated segment of s is
// base64url-encoded JSON object, as a JWT header is.
func jsonHeader(s string) bool {
	head, _, _ := strings.Cut(s, ".")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(head, "="))
	if err != nil {
		return false
	}
	var obj map[string]any
	return json.Unmarshal(raw, &obj) == nil
}

// passwordSpan reports the assigned value, unless it stands for no
// password at all.
func passwordSpan(text string, loc []int) (int, int, bool) {
	for g := 1; g <= 3; g++ {
		if s, e := loc[2*g], loc[2*g+1]; s >= 0 {
			return s, e, plausiblePassword(text[s:e])
		}
	}
	return 0, 0, false
}

// minPasswordRunes is the shortest value taken for a password: shorter
// ones are far more often prose ("password: none") or types ("str").
const minPasswordRunes = 6

// placeholders are values that say "put a password here".
var placeholders = map[string]bool{
	"changeme": true, "change_me": true, "change-me": true, "password": true, "passwd": true,
	"secret": true, "example": true, "redacted": true, "placeholder": true, "notasecret": true,
	"string": true, "null": true, "none": true, "undefined": true, "required": true,
	"optional": true, "empty": true, "hidden": true, "masked": true, "unset": true,
}

// code matches a dotted member access such as cfg.Password or
// settings.db.password: a reference, not a value.
var code = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// plausiblePassword reports whether v could be a real password rather
// than a placeholder, a reference or code.
func plausiblePassword(v string) bool {
	v = strings.TrimSpace(v)
	if utf8.RuneCountInString(v) < minPasswordRunes {
		return false
	}
	lower := strings.ToLower(v)
	switch {
	case placeholders[lower],
		strings.HasPrefix(v, "$"), strings.HasPrefix(v, "%"), strings.HasPrefix(v, "<"),
		strings.Contains(v, "${"), strings.Contains(v, "{{"), strings.Contains(v, "#{"),
		strings.ContainsAny(v, "()[]"),
		strings.Contains(lower, "changeme"), strings.Contains(lower, "example"),
		strings.Contains(lower, "placeholder"), strings.Contains(lower, "your"),
		sameRune(v), code.MatchString(v):
		return false
	}
	return true
}

// sameRune reports masks such as ******** and xxxxxxxx.
func sameRune(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	return strings.Trim(s, string(first)) == ""
}
