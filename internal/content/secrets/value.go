package secrets

import (
	"math"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// minPasswordRunes is the shortest value taken for a password: shorter
// ones are far more often prose ("password: none") or types ("str").
const minPasswordRunes = 6

// placeholders are values that say "put a password here", or name a
// kind of authentication rather than a credential.
var placeholders = map[string]bool{
	"changeme": true, "change_me": true, "change-me": true, "password": true, "passwd": true,
	"secret": true, "example": true, "redacted": true, "placeholder": true, "notasecret": true,
	"string": true, "null": true, "none": true, "undefined": true, "required": true,
	"optional": true, "empty": true, "hidden": true, "masked": true, "unset": true,
	"pass": true, "nil": true, "true": true, "false": true, "default": true, "dummy": true,
	"123456": true, "1234567": true, "12345678": true, "123456789": true, "qwerty": true, "abc123": true,
	"letmein": true, "foobar": true, "testing": true,
	// nsswitch.conf sources, under passwd:
	"compat": true, "files": true, "systemd": true, "nisplus": true, "winbind": true,
	"oauth": true, "oauth2": true, "bearer": true, "basic": true, "digest": true, "kerberos": true,
	"anonymous": true, "disabled": true, "enabled": true, "inherit": true, "prompt": true,
}

// placeholderWords matches values made of a word that names the
// credential instead of being one: mypassword, proxypass,
// your_api_key_here, db-secret.
var placeholderWords = regexp.MustCompile(`^(?:[a-z]+[\s_.-]*)*(?:pass(?:word|wd)?|pwd|secret|token|api[\s_.-]*key|key|credential)s?[\s_.-]*(?:here|goes[\s_.-]*here|value|[0-9]{1,3})?$`)

// code matches a dotted member access such as cfg.Password or
// settings.db.password: a reference, not a value.
var code = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// call matches the start of a call or an index, such as
// os.Getenv("X"), getpass(), config["password"] or $_POST['pw']: code
// that fetches a value. A bracket followed by anything else, as in
// Hunter(2), may be part of a password.
var call = regexp.MustCompile(`^\$?[A-Za-z_][A-Za-z0-9_.:>-]*[(\[](?:["'A-Za-z_)\]]|$)`)

// typeName matches a type such as *string or []byte.
var typeName = regexp.MustCompile(`^(?:\*|\[\])[A-Za-z_][A-Za-z0-9_.]*$`)

// variable matches a shell, PHP or Perl variable ($DB_PASSWORD, $pass):
// a reference unless it mixes case and digits as a password does.
var variable = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// plausiblePassword reports whether v could be a real password rather
// than a placeholder, a reference or code.
func plausiblePassword(v string) bool {
	v = strings.TrimSpace(v)
	return utf8.RuneCountInString(v) >= minPasswordRunes && !standsForNone(v)
}

// standsForNone reports values that stand for no credential: templates
// and references (${VAR}, $VAR, {{ .x }}, %(x)s, <your password>), masks
// (***, xxxxxx), code (os.Getenv("X"), cfg.Password), paths to a file
// that holds the secret, type names and well-known placeholders. A real
// password that happens to equal one of those is weak enough to be
// public.
func standsForNone(v string) bool {
	v = strings.TrimSpace(v)
	lower := strings.ToLower(v)
	switch {
	case v == "", placeholders[lower], placeholderWords.MatchString(lower), placeholderPhrase(lower),
		isReference(v), isMask(lower),
		code.MatchString(v), call.MatchString(v), typeName.MatchString(v),
		strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(lower, "file:"):
		return true
	}
	return false
}

// placeholderPhrase reports values that address the reader ("your
// password", "yourSecretKey") or stand in for an example.
func placeholderPhrase(lower string) bool {
	if strings.Contains(lower, "changeme") || strings.Contains(lower, "example") || strings.Contains(lower, "placeholder") ||
		strings.Contains(lower, "...") || strings.Contains(lower, "…") {
		return true
	}
	if !strings.Contains(lower, "your") {
		return false
	}
	for _, w := range []string{"pass", "pwd", "secret", "key", "token", "here", "cred"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// isReference reports templates and variables that a program or a shell
// replaces with the real value.
func isReference(v string) bool {
	for _, t := range []string{"${", "{{", "#{", "$(", "%(", "%{", "<%", "{%"} {
		if strings.Contains(v, t) {
			return true
		}
	}
	switch {
	case strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">"),
		strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}"),
		len(v) > 2 && strings.HasPrefix(v, "%") && strings.HasSuffix(v, "%"),
		v == "%s" || v == "%v" || v == "?":
		return true
	case variable.MatchString(v):
		name := v[1:]
		return strings.ToUpper(name) == name || !strings.ContainsAny(name, "0123456789")
	}
	return false
}

// isMask reports masks such as ********, xxxxxxxx and xxxx-xxxx.
func isMask(lower string) bool {
	first, _ := utf8.DecodeRuneInString(lower)
	return strings.Trim(lower, string(first)) == "" || strings.Trim(lower, "x*#•._- ") == ""
}

// plausibleURLPassword reports whether the password of a URL is a real
// one. A URL's structure is strong evidence, so any length counts; a
// colon in it is another syntax, as in cvs://:pserver:user@host.
func plausibleURLPassword(v string) bool {
	if strings.Contains(v, ":") {
		return false
	}
	if u, err := url.PathUnescape(v); err == nil {
		v = u
	}
	return !standsForNone(v)
}

// plausibleEntryPassword reports whether the password of a .netrc or
// .pgpass entry is a real one.
func plausibleEntryPassword(v string) bool {
	return !standsForNone(v)
}

// Generic secrets: a name that says key, secret or token, and a value
// random enough to be one.
const (
	// minSecretBytes is the shortest value a generic secret may have.
	minSecretBytes = 12
	// minHexSecretBytes is the shortest hex value taken for a secret:
	// shorter hex is far more often an id, a hash prefix or a colour.
	minHexSecretBytes = 32
	// minEntropy is the Shannon entropy, in bits per byte, below which a
	// value is taken for a word or an identifier; hex values, of 16
	// symbols, need minHexEntropy.
	minEntropy    = 3.5
	minHexEntropy = 3.0
)

// secretSuffixes are the last words of a name that holds a secret.
var secretSuffixes = map[string]bool{
	"key": true, "secret": true, "token": true,
	"apikey": true, "secretkey": true, "accesskey": true, "privatekey": true, "masterkey": true,
	"authkey": true, "clientsecret": true, "appsecret": true, "authtoken": true, "accesstoken": true,
	"apitoken": true, "refreshtoken": true, "sessiontoken": true, "apisecret": true,
}

// notSecretQualifiers are words before key or token that make the name
// something other than a credential: a database key, a public key, a
// pagination token, a tokenizer's special token.
var notSecretQualifiers = map[string]bool{
	"primary": true, "foreign": true, "sort": true, "partition": true, "cache": true, "public": true,
	"pub": true, "gpg": true, "pgp": true, "signing": true, "sign": true, "hot": true, "unique": true,
	"index": true, "hash": true, "row": true, "map": true, "dict": true, "lookup": true, "short": true,
	"shortcut": true, "music": true, "group": true, "host": true, "id": true, "next": true, "page": true,
	"continuation": true, "pagination": true, "cursor": true, "sync": true, "resume": true, "max": true,
	"min": true, "num": true, "count": true, "total": true, "csrf": true, "xsrf": true, "cancel": true,
	"cancellation": true, "bos": true, "eos": true, "pad": true, "unk": true, "mask": true, "sep": true,
	"cls": true, "special": true, "start": true, "end": true, "stop": true, "eof": true, "lexer": true,
	"parser": true, "sequence": true, "no": true, "non": true, "dkim": true, "registry": true, "field": true,
	"column": true, "table": true, "object": true, "s3": true, "bucket": true, "idempotency": true,
	"routing": true, "dedup": true, "dedupe": true, "message": true, "ordering": true, "natural": true,
	"composite": true, "surrogate": true, "keyboard": true, "license": true, "product": true,
}

// genericSpan reports the value of an assignment to a name like API_KEY,
// clientSecret or TOKEN when it looks random enough to be a secret.
func genericSpan(text string, loc []int) (int, int, bool) {
	kw := 3 // key
	switch text[loc[0]] | 0x20 {
	case 's':
		kw = 6
	case 't':
		kw = 5
	}
	if !secretName(nameBefore(text, loc[0]) + text[loc[0]:loc[0]+kw]) {
		return 0, 0, false
	}
	return valueIf(plausibleSecret)(text, loc)
}

// maxNameBytes bounds how far back genericSpan reads a name.
const maxNameBytes = 64

// nameBefore returns the identifier characters that end at i.
func nameBefore(text string, i int) string {
	j := i
	for j > 0 && i-j < maxNameBytes && (isWordByte(text[j-1]) || text[j-1] == '-' || text[j-1] == '.') {
		j--
	}
	return text[j:i]
}

// secretName reports whether name, split into words at separators and
// case changes, ends with a word that holds a secret and is not
// qualified into something else. A bare "key" is too common to count.
func secretName(name string) bool {
	words := splitWords(name)
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if !secretSuffixes[last] {
		return false
	}
	if len(words) == 1 {
		return last != "key"
	}
	return !notSecretQualifiers[words[len(words)-2]]
}

// splitWords lowercases name and splits it at _, -, . and at case
// changes: API_KEY, apiKey and APIKey are all api, key.
func splitWords(name string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c == '-' || c == '.' {
			flush()
			continue
		}
		upper := 'A' <= c && c <= 'Z'
		if upper && i > 0 {
			prev := name[i-1]
			nextLower := i+1 < len(name) && 'a' <= name[i+1] && name[i+1] <= 'z'
			if 'a' <= prev && prev <= 'z' || '0' <= prev && prev <= '9' || ('A' <= prev && prev <= 'Z' && nextLower) {
				flush()
			}
		}
		b.WriteByte(c | 0x20*boolByte(upper))
	}
	flush()
	return words
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// plausibleSecret reports whether the value of a secret-named assignment
// looks like a generated key or token: long enough, one piece without
// white space, not a reference, a path or a URL, with letters and digits
// (or both cases) and a Shannon entropy that words and identifiers
// seldom reach.
func plausibleSecret(v string) bool {
	v = strings.TrimSpace(v)
	if u, err := url.PathUnescape(v); err == nil && strings.ContainsFunc(u, unicode.IsSpace) {
		return false // Root%20CA%20Certificates
	}
	if len(v) < minSecretBytes || strings.ContainsFunc(v, unicode.IsSpace) || strings.Contains(v, "://") || standsForNone(v) {
		return false
	}
	var lower, upper, digit, other bool
	hex := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z':
			lower = true
			hex = hex && c <= 'f'
		case 'A' <= c && c <= 'Z':
			upper = true
			hex = hex && c <= 'F'
		case '0' <= c && c <= '9':
			digit = true
		default:
			other = true
			hex = false
		}
	}
	if hex {
		return len(v) >= minHexSecretBytes && entropy(v) >= minHexEntropy
	}
	if !digit && !(lower && upper && other) {
		return false // words and identifiers: MyServiceName, my-app-token
	}
	return (lower || upper) && entropy(v) >= min(minEntropy, 0.9*math.Log2(float64(len(v))))
}

// entropy is the Shannon entropy of s's bytes, in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
