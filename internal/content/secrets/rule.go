package secrets

import (
	"regexp"
	"slices"
	"strings"
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
	RuleGitLabToken        = "gitlab_token"
	RuleNPMToken           = "npm_token"
	RuleHuggingFaceToken   = "huggingface_token"
	RuleGoogleAPIKey       = "google_api_key"
	RuleSendGridKey        = "sendgrid_api_key"
	RuleAzureStorageKey    = "azure_storage_key"
	RuleURLPassword        = "url_password"
	RuleBasicAuth          = "basic_auth"
	RuleNetrc              = "netrc_password"
	RulePgpass             = "pgpass_password"
	RuleGenericSecret      = "generic_secret"
)

// rule is one way of finding one kind of secret; several rules may find
// the same kind (name), in different formats.
type rule struct {
	name string
	// re matches the secret; it is anchored at the literal when back is 0.
	re *regexp.Regexp
	// literals are substrings of which every match contains one, starting
	// at most back bytes after the match's start; a match never ends more
	// than reach bytes after its literal. The pattern is tried only around
	// them, so that its cost follows the number of candidates, not the
	// length of the text. With fold, the literals are lower case and match
	// in any case.
	literals    []string
	fold        bool
	back, reach int
	// wordStart requires the match not to follow a letter, digit or
	// underscore: a leading \b, checked against the whole text.
	wordStart bool
	// head, when set, matches the first bytes of every match; it is tried
	// on headBytes bytes first, so that a literal common in prose ("pass",
	// "sk-") is dismissed without running re over its whole reach.
	head *regexp.Regexp
	// pre, when set, is a check cheaper than head on the text at a
	// literal, tried before it.
	pre func(text string, at int) bool
	// span turns a submatch index slice into the secret's span, or reports
	// a near miss. Nil means the whole match is the secret.
	span func(text string, loc []int) (start, end int, ok bool)
	// find, when set, replaces the literal search and re: it appends the
	// rule's matches in text to out, in one pass over the text.
	find func(name, text string, out []Match) []Match
}

// headBytes is the most a rule's head pattern sees.
const headBytes = 64

// spec is how a rule is written.
type spec struct {
	name        string
	pattern     string
	literals    []string
	fold        bool
	back, reach int
	wordStart   bool
	head        string
	pre         func(text string, at int) bool
	span        func(text string, loc []int) (start, end int, ok bool)
	find        func(name, text string, out []Match) []Match
}

// compile builds the rules. A pattern whose literal starts every match
// (back is 0) is anchored, so each candidate costs one anchored attempt.
func compile(specs []spec) []rule {
	out := make([]rule, len(specs))
	for i, s := range specs {
		out[i] = rule{
			name: s.name, literals: s.literals, fold: s.fold, back: s.back, reach: s.reach,
			wordStart: s.wordStart, pre: s.pre, span: s.span, find: s.find,
		}
		if s.pattern != "" {
			pattern := s.pattern
			if s.back == 0 {
				pattern = `\A(?:` + pattern + `)`
			}
			out[i].re = regexp.MustCompile(pattern)
		}
		if s.head != "" {
			out[i].head = regexp.MustCompile(`\A(?:` + s.head + `)`)
		}
	}
	return out
}

// Rules lists the names of every kind of secret Scan finds, once each, in
// the order Scan first tries them.
func Rules() []string {
	var names []string
	for _, r := range rules {
		if !slices.Contains(names, r.name) {
			names = append(names, r.name)
		}
	}
	return names
}

// firstGroup returns a span function that reports the pattern's first
// group, once check (when not nil) accepts it.
func firstGroup(check func(text string, start, end int) bool) func(string, []int) (int, int, bool) {
	return group(1, check)
}

// group returns a span function that reports the pattern's group g, once
// check (when not nil) accepts it.
func group(g int, check func(text string, start, end int) bool) func(string, []int) (int, int, bool) {
	return func(text string, loc []int) (int, int, bool) {
		s, e := loc[2*g], loc[2*g+1]
		if s < 0 || (check != nil && !check(text, s, e)) {
			return 0, 0, false
		}
		return s, e, true
	}
}

// groupIf is group with a check on the group's text alone.
func groupIf(g int, ok func(s string) bool) func(string, []int) (int, int, bool) {
	return group(g, func(text string, s, e int) bool { return ok(text[s:e]) })
}

// wholeIf returns a span function that reports the whole match when ok
// accepts its text.
func wholeIf(ok func(s string) bool) func(string, []int) (int, int, bool) {
	return func(text string, loc []int) (int, int, bool) {
		return loc[0], loc[1], ok(text[loc[0]:loc[1]])
	}
}

// quotedOrBare is the value of an assignment: double-quoted, single-quoted
// or bare, in groups 1, 2 and 3.
const quotedOrBare = `(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'<>,;&]+))`

// assigned is what joins a name to its value: =, :, := or =>, with an
// optional closing quote of the name before it.
const assigned = `["']?[ \t]*(?::=|=>|[:=])[ \t]*`

// valueIf returns a span function that reports the assigned value (the
// first of groups 1 to 3 that took part) when ok accepts it. A bare value
// that a plain word follows on its line is prose or a list, as in
// "passwd: compat systemd" or "Password= setting in the", unless it is
// tied to its name by a bare = (--password=x dbname, as on a command
// line).
func valueIf(ok func(v string) bool) func(string, []int) (int, int, bool) {
	return func(text string, loc []int) (int, int, bool) {
		for g := 1; g <= 3; g++ {
			if s, e := loc[2*g], loc[2*g+1]; s >= 0 {
				op := text[loc[0]:s]
				tight := strings.Contains(op, "=") && !strings.ContainsAny(op, " \t")
				if g == 3 && !tight && wordFollows(text[e:]) {
					return 0, 0, false
				}
				return s, e, ok(text[s:e])
			}
		}
		return 0, 0, false
	}
}

// keywordAssigned returns a pre check that the text at a literal starts
// with one of keywords, in any case, followed by an assignment: an
// optional closing quote, spaces, then = or :.
func keywordAssigned(keywords ...string) func(text string, at int) bool {
	return func(text string, at int) bool {
		for _, kw := range keywords {
			if len(text)-at >= len(kw) && strings.EqualFold(text[at:at+len(kw)], kw) {
				i := at + len(kw)
				if i < len(text) && (text[i] == '"' || text[i] == '\'') {
					i++
				}
				for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
					i++
				}
				return i < len(text) && (text[i] == '=' || text[i] == ':')
			}
		}
		return false
	}
}

// wordFollows reports whether rest, after spaces, goes on with a word on
// the same line that is not another assignment (host=db password = x
// dbname=y).
func wordFollows(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" || !isWordByte(rest[0]) {
		return false
	}
	end := strings.IndexAny(rest, " \t\r\n")
	if end < 0 {
		end = len(rest)
	}
	return !strings.Contains(rest[:end], "=")
}

// RuleNames lists the name of every kind of secret Scan finds, sorted.
func RuleNames() []string {
	names := make([]string, 0, len(rules))
	for _, r := range rules {
		names = append(names, r.name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
