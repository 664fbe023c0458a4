package secrets_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/content/secrets"
)

// FuzzScan scans arbitrary text with a known token appended. Matches stay
// inside the text, come in order, name a known rule, and the token is
// found whatever precedes it (by itself, or inside a base64 run that
// wraps onto its line).
func FuzzScan(f *testing.F) {
	for _, seed := range []string{
		"", "plain prose", pemBlock("RSA PRIVATE KEY"), "-----BEGIN PRIVATE KEY-----\nAAAA",
		"password = hunter22!\npasswd: ${X}\n", `{"private_key": "-----BEGIN x", "client_email": "a@b"}`,
		"sk-" + alnum40, "eyJ" + jwtHeader, "AKIA" + "IOSFODNN7EXAMPLE", "xoxb-123456-abcdefghij",
		"https://hooks.slack.com/services/" + alnum40, "aws_secret_access_key=" + alnum40,
		"tls.key: " + b64(pemBlock("RSA PRIVATE KEY")), wrap(b64(b64(pemBlock("EC PRIVATE KEY"))), 76, "\n"),
		"---- BEGIN SSH2 ENCRYPTED " + "PRIVATE KEY ----\n" + pemBody, puttyKey, "postgres://admin:pw@db/prod",
		"machine h login u password " + alnum40[:12], "h:5432:db:u:" + alnum40[:12], "Authorization: Basic " + b64("u:"+alnum40[:8]),
		`{"auth": "` + b64("u:"+alnum40[:8]) + `"}`, "API_KEY=" + alnum40[:32] + "\nTOKEN=" + hex64, "xapp-1-A01-" + alnum40,
		"glpat-" + alnum40[:20], "AccountKey=" + b64(alnum40+alnum40), "password: Hunter(2)xyz dbname=x",
	} {
		f.Add(seed)
	}
	token := "ghp_" + alnum40[:36]
	rules := secrets.Rules()
	f.Fuzz(func(t *testing.T, text string) {
		text += "\n" + token + "\n"
		at := len(text) - len(token) - 1
		matches := secrets.Scan(text)
		found := false
		for i, m := range matches {
			if m.Start < 0 || m.Start >= m.End || m.End > len(text) {
				t.Fatalf("match %+v outside the text of %d bytes", m, len(text))
			}
			if !slices.Contains(rules, m.Rule) {
				t.Fatalf("unknown rule %q", m.Rule)
			}
			if i > 0 && (matches[i-1].Start > m.Start || matches[i-1].Start == m.Start && matches[i-1].End > m.End) {
				t.Fatalf("matches out of order: %+v", matches)
			}
			found = found || (m.Rule == secrets.RuleGitHubToken && m.Start <= at && m.End >= at+len(token))
		}
		if !found {
			t.Fatalf("the appended token was not found: %+v", matches)
		}
		if got := secrets.Touched(matches, []secrets.Span{{Start: 0, End: len(text)}}); !slices.Equal(got, []int{0}) {
			t.Fatalf("a span over the whole text is not touched: %v", got)
		}
	})
}
