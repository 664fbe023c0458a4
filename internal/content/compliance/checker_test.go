package compliance_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestPolicyCatchesSecretsAndNothingElse(t *testing.T) {
	t.Parallel()
	policy := compliance.NewChecker(compliance.DefaultRules(), nil)
	for _, tc := range []struct{ rule, text string }{
		{"private_key", "x -----BEGIN RSA PRIVATE KEY----- y"},
		{"private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"},
		{"aws_access_key", "key AKIAABCDEFGHIJKLMNOP here"},
		{"gcp_service_account_key", `{"private_key_id": "0123456789abcdef0123456789abcdef01234567"}`},
		{"github_token", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"},
		{"slack_token", "xoxb-1234567890-abc"},
		{"openai_api_key", "sk-abcdefghijklmnopqrstuvwxyz0123456789"},
		{"", "plain text about rivers: a private key to the sluice house, sk- and AKIA as words"},
		{"", "ASIA is a continent; the keeper's AKIA notes are short"},
	} {
		assertEscalation(t, policy, tc.rule, tc.text)
	}
}

// assertEscalation checks that text is escalated by rule, or passes when
// rule is empty, and that an escalation never quotes the text.
func assertEscalation(t *testing.T, policy *compliance.Checker, rule, text string) {
	t.Helper()
	err := policy.Check(&messages.ChunkJob{Text: text})
	var ce *classify.Error
	switch {
	case rule == "" && err != nil:
		t.Errorf("%q escalated: %v", text, err)
	case rule != "" && (!errors.As(err, &ce) || ce.Code != rule || ce.Disposition != classify.Escalate):
		t.Errorf("%q: got %v, want escalation by %s", text, err, rule)
	case err != nil && strings.Contains(err.Error(), text):
		t.Errorf("the escalation quotes the matched text: %v", err)
	}
}

// The default policy escalates every kind of secret the document scanner
// knows, under the scanner's rule name, besides the historical ones.
func TestPolicyUsesSecretRules(t *testing.T) {
	t.Parallel()
	policy := compliance.NewChecker(compliance.DefaultRules(), nil)
	for _, tc := range []struct{ rule, text string }{
		{secrets.RuleStripeKey, "billing: sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"},
		{secrets.RulePassword, "DB_PASSWORD=s3cr3t-Hunter2"},
		{secrets.RuleSlackWebhook, "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"", "password: changeme"},
	} {
		assertEscalation(t, policy, tc.rule, tc.text)
	}
	// Every positive sample of the scanner's corpus, text or metadata, is
	// escalated, under a rule name the scanner or the chunk-level patterns
	// define.
	raw, err := os.ReadFile("../secrets/testdata/positives.txt")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, name := range secrets.Rules() {
		known[name] = true
	}
	for _, r := range compliance.DefaultRules() {
		known[r.Name] = true
	}
	sections := strings.Split(strings.ReplaceAll(string(raw), "§", ""), "\n-- ")[1:]
	checked := 0
	for _, sec := range sections {
		header, body, _ := strings.Cut(sec, " --\n")
		job := &messages.ChunkJob{Text: body}
		if _, desc, _ := strings.Cut(header, ": "); strings.HasPrefix(desc, "metadata") {
			// A metadata sample is a chunk's metadata, screened too.
			job = &messages.ChunkJob{Text: "a clean chunk", Metadata: json.RawMessage(body)}
		}
		checked++
		err := policy.Check(job)
		var ce *classify.Error
		if !errors.As(err, &ce) || ce.Disposition != classify.Escalate || !known[ce.Code] {
			t.Errorf("sample %q: %v; want an escalation under a known rule", header, err)
		}
	}
	if checked < 40 {
		t.Fatalf("read %d samples from the scanner's corpus; its format changed", checked)
	}
}

func TestPolicyAllowList(t *testing.T) {
	t.Parallel()
	policy := compliance.NewChecker(nil, []string{"docs", " wiki "})
	if err := policy.Check(&messages.ChunkJob{SourceID: "wiki", Text: "x"}); err != nil {
		t.Fatalf("allowed source refused: %v", err)
	}
	err := policy.Check(&messages.ChunkJob{SourceID: "scrape", Text: "x"})
	var ce *classify.Error
	if !errors.As(err, &ce) || ce.Code != "source_not_allowed" {
		t.Fatalf("unlisted source: %v", err)
	}
}

func TestParseRules(t *testing.T) {
	t.Parallel()
	rules, err := compliance.ParseRules([]string{`ssn=\d{3}-\d{2}-\d{4}`})
	if err != nil || len(rules) != 1 || rules[0].Name != "ssn" {
		t.Fatalf("rules %v err %v", rules, err)
	}
	for _, bad := range []string{"noequals", "=x", "x=(", "x="} {
		if _, err := compliance.ParseRules([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// BenchmarkPolicyCheck is a clean chunk of about 1,800 bytes, as most
// chunks are.
func BenchmarkPolicyCheck(b *testing.B) {
	benchmarkCheck(b, nil)
}

// BenchmarkPolicyCheckMetadata is the same chunk with a little metadata.
func BenchmarkPolicyCheckMetadata(b *testing.B) {
	benchmarkCheck(b, json.RawMessage(`{"lang":"en","page":12,"tags":["gates","water"],"title":"Keeper's notes"}`))
}

func benchmarkCheck(b *testing.B, meta json.RawMessage) {
	policy := compliance.NewChecker(compliance.DefaultRules(), nil)
	job := &messages.ChunkJob{
		Text:     strings.Repeat("The sluice gate regulates the spring meltwater when the gauge reads above the red mark. ", 20),
		Metadata: meta,
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := policy.Check(job); err != nil {
			b.Fatal(err)
		}
	}
}
