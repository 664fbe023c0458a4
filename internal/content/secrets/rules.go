package secrets

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

var rules = compile([]spec{
	{
		name: RulePrivateKey,
		pattern: `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----` +
			`|---- BEGIN SSH2 (?:[A-Z0-9]+ )*PRIVATE KEY ----`,
		literals: []string{"-----BEGIN ", "---- BEGIN SSH2 "},
		reach:    128,
		span:     privateKeySpan,
	},
	{
		name:     RulePrivateKey,
		pattern:  `PuTTY-User-Key-File-[0-9]+:[^\r\n]*`,
		literals: []string{"PuTTY-User-Key-File-"},
		reach:    256,
		span:     puttySpan,
	},
	{
		name:      RuleAWSAccessKeyID,
		pattern:   `(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}\b`,
		literals:  []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA"},
		reach:     32,
		wordStart: true,
	},
	{
		name: RuleAWSSecretAccessKey,
		pattern: `(?i)(?:(?:aws_?)?secret_?access_?key|aws_?(?:secret_?key|sk))["']?[ \t]*(?::=|=>|[:=])[ \t]*["']?` +
			`([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`,
		literals: []string{"aws", "secret"},
		fold:     true,
		reach:    128,
		head:     `(?i)(?:aws_?)?secret_?access|aws_?(?:secret|sk)`,
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
		pattern:   `(?:xox[baprse]|xoxe\.xox[bp]|xapp)-[0-9]+-[A-Za-z0-9-]{10,}`,
		literals:  []string{"xox", "xapp-"},
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
		pattern:   `(?:[sr]k_live_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9]{24,})\b`,
		literals:  []string{"sk_live_", "rk_live_", "whsec_"},
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
		name:     RulePassword,
		pattern:  `(?i)(?:password|passwd|pwd)` + assigned + quotedOrBare,
		literals: []string{"pass", "pwd"},
		fold:     true,
		reach:    1024,
		pre:      keywordAssigned("password", "passwd", "pwd"),
		span:     valueIf(plausiblePassword),
	},
	{
		name:      RuleGitLabToken,
		pattern:   `gl(?:pat|dt|rt|ptt|oas)-[A-Za-z0-9_-]{20,}`,
		literals:  []string{"glpat-", "gldt-", "glrt-", "glptt-", "gloas-"},
		reach:     256,
		wordStart: true,
		span:      wholeIf(lettersAndDigits),
	},
	{
		name:      RuleNPMToken,
		pattern:   `npm_[A-Za-z0-9]{36}\b`,
		literals:  []string{"npm_"},
		reach:     64,
		wordStart: true,
		span:      wholeIf(lettersAndDigits),
	},
	{
		name:      RuleHuggingFaceToken,
		pattern:   `(?:hf_|api_org_)[A-Za-z0-9]{34,40}\b`,
		literals:  []string{"hf_", "api_org_"},
		reach:     64,
		wordStart: true,
		span:      wholeIf(mixedCase),
	},
	{
		name:      RuleGoogleAPIKey,
		pattern:   `(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|\z)`,
		literals:  []string{"AIza"},
		reach:     64,
		wordStart: true,
		span:      firstGroup(nil),
	},
	{
		name:      RuleSendGridKey,
		pattern:   `SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`,
		literals:  []string{"SG."},
		reach:     128,
		wordStart: true,
	},
	{
		name:     RuleAzureStorageKey,
		pattern:  `(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}={0,2})`,
		literals: []string{"AccountKey=", "SharedAccessKey="},
		reach:    256,
		span:     firstGroup(nil),
	},
	{
		name:     RuleURLPassword,
		pattern:  `://[^\s/?#@:"'<>]*:([^\s/?#@"'<>]+)@[A-Za-z0-9\[_-]`,
		literals: []string{"://"},
		reach:    512,
		span:     groupIf(1, plausibleURLPassword),
	},
	{
		name:      RuleBasicAuth,
		pattern:   `(?i)basic[ \t]+([A-Za-z0-9+/]{4,}={0,2})(?:[^A-Za-z0-9+/=]|\z)`,
		literals:  []string{"basic "},
		fold:      true,
		reach:     1024,
		wordStart: true,
		span:      groupIf(1, encodedCredentials),
	},
	{
		name:     RuleBasicAuth,
		pattern:  `"auth"[ \t]*:[ \t]*"([A-Za-z0-9+/]{4,}={0,2})"`,
		literals: []string{`"auth"`},
		reach:    1024,
		span:     groupIf(1, encodedCredentials),
	},
	{
		name: RuleNetrc,
		pattern: `machine[ \t\r\n]+\S+(?:[ \t\r\n]+(?:login|account|port)[ \t\r\n]+\S+)*` +
			`[ \t\r\n]+password[ \t\r\n]+(\S+)`,
		literals:  []string{"machine"},
		reach:     1024,
		wordStart: true,
		span:      groupIf(1, plausibleEntryPassword),
	},
	{
		name: RulePgpass,
		find: findPgpass,
	},
	{
		name:     RuleGenericSecret,
		pattern:  `(?i)(?:key|secret|token)` + assigned + quotedOrBare,
		literals: []string{"key", "secret", "token"},
		fold:     true,
		reach:    1024,
		pre:      keywordAssigned("key", "secret", "token"),
		span:     genericSpan,
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

var pemEnd = regexp.MustCompile(`-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|---- END SSH2 (?:[A-Z0-9]+ )*PRIVATE KEY ----`)

// puttyWindow is how far after a PuTTY key file's first line its
// Private-Lines header may be: past the public lines of a 16384-bit key.
const puttyWindow = 16 << 10

// puttySpan reports a PuTTY key file (.ppk) from its first line to the
// end of its Private-MAC line, or to the end of the text when that line
// is missing. A first line without a Private-Lines header after it is a
// mention of the format, not a key.
func puttySpan(text string, loc []int) (int, int, bool) {
	rest := text[loc[1]:min(len(text), loc[1]+puttyWindow)]
	lines := strings.Index(rest, "\nPrivate-Lines:")
	if lines < 0 {
		return 0, 0, false
	}
	mac := strings.Index(rest[lines:], "\nPrivate-MAC:")
	if mac < 0 {
		return loc[0], len(text), true
	}
	end := loc[1] + lines + mac + 1
	if nl := strings.IndexByte(text[end:], '\n'); nl >= 0 {
		return loc[0], end + nl, true
	}
	return loc[0], len(text), true
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

// mixedCase rejects runs of one case, such as a long identifier, that a
// random token of letters is very unlikely to be.
func mixedCase(s string) bool {
	return strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") && strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
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

// encodedCredentials reports whether s is base64 of user:password, as in
// HTTP Basic authorization and Docker's config.json, with a password that
// is not a placeholder.
func encodedCredentials(s string) bool {
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || !utf8.Valid(raw) {
		return false
	}
	cred := string(raw)
	if strings.IndexFunc(cred, unicode.IsControl) >= 0 {
		return false
	}
	_, pass, ok := strings.Cut(cred, ":")
	return ok && pass != "" && !standsForNone(pass)
}
