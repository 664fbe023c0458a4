package compliance_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// referenceCheck is the policy check before its rules' literals were
// found in one pass: each rule's literals searched for one at a time,
// then its pattern, then the scanner. It stays as the reference the
// one-pass check must agree with.
func referenceCheck(rules []compliance.Rule, job *messages.ChunkJob) string {
	first := func(text string, scanner bool) string {
		for _, r := range rules {
			if r.Scanner {
				if m := secrets.Scan(text); scanner && len(m) > 0 {
					return m[0].Rule
				}
				continue
			}
			held := len(r.Literals) == 0
			for _, lit := range r.Literals {
				held = held || strings.Contains(text, lit)
			}
			if held && r.Pattern.MatchString(text) {
				return r.Name
			}
		}
		return ""
	}
	if r := first(job.Text, true); r != "" {
		return "text:" + r
	}
	if len(job.Metadata) == 0 {
		return ""
	}
	if r := first(string(job.Metadata), false); r != "" {
		return "metadata:" + r
	}
	findings, err := secrets.ScanMetadataJSON(job.Metadata)
	if err != nil {
		return "invalid"
	}
	if len(findings) > 0 {
		return "metadata:" + findings[0].Rule
	}
	return ""
}

// verdict renders what Check decided the way referenceCheck does.
func verdict(err error) string {
	var ce *classify.Error
	switch {
	case err == nil:
		return ""
	case !errors.As(err, &ce):
		return fmt.Sprintf("unexpected %v", err)
	case ce.Disposition != classify.Escalate:
		return "invalid"
	case strings.Contains(err.Error(), "chunk metadata"):
		return "metadata:" + ce.Code
	default:
		return "text:" + ce.Code
	}
}

// The one-pass check reaches the verdict the rule-at-a-time check
// reached, on every sample of the scanner's corpus (as text and as
// metadata) and on random text built from the rules' literals.
func TestPolicyMatchesReference(t *testing.T) {
	t.Parallel()
	extra, err := compliance.ParseRules([]string{`ssn=\d{3}-\d{2}-\d{4}`})
	if err != nil {
		t.Fatal(err)
	}
	rules := append(compliance.DefaultRules(), extra...)
	policy := compliance.NewChecker(rules, nil)
	var jobs []*messages.ChunkJob
	for _, name := range []string{"positives.txt", "misses.txt"} {
		raw, err := os.ReadFile("../secrets/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range strings.Split(strings.ReplaceAll(string(raw), "§", ""), "\n-- ") {
			_, body, _ := strings.Cut(sec, " --\n")
			jobs = append(jobs, &messages.ChunkJob{Text: body})
			if json.Valid([]byte(body)) && strings.HasPrefix(strings.TrimSpace(body), "{") {
				jobs = append(jobs, &messages.ChunkJob{Text: "a clean chunk", Metadata: json.RawMessage(body)})
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		text := randomText(rng, rules)
		jobs = append(jobs, &messages.ChunkJob{Text: text})
		meta, _ := json.Marshal(map[string]string{"note": text, "password": text})
		jobs = append(jobs, &messages.ChunkJob{Text: "x", Metadata: meta})
	}
	escalated := 0
	for _, job := range jobs {
		want := referenceCheck(rules, job)
		if got := verdict(policy.Check(job)); got != want {
			t.Fatalf("text %q metadata %q: one pass says %q, reference %q", job.Text, job.Metadata, got, want)
		}
		if want != "" {
			escalated++
		}
	}
	if escalated < len(jobs)/20 {
		t.Fatalf("only %d of %d jobs escalated: the inputs hardly exercise the rules", escalated, len(jobs))
	}
}

// randomText strings together pieces of the rules' literals and of
// secrets, in any case and cut short, with words and punctuation.
func randomText(rng *rand.Rand, rules []compliance.Rule) string {
	pieces := []string{" ", "\n", "=", ": ", `"`, "the river ", "0123456789abcdef0123456789abcdef01234567",
		"ABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwxyz0123456789AB", "-----BEGIN RSA ", "-----", "password=", "123-45-6789",
		"sk_live_", "4eC39HqLyjWDarjtT1zdp7dc", "eyJhbGciOiJIUzI1NiJ9", "."}
	for _, r := range rules {
		pieces = append(pieces, r.Literals...)
	}
	var b strings.Builder
	for range rng.IntN(30) {
		p := pieces[rng.IntN(len(pieces))]
		switch rng.IntN(5) {
		case 0:
			p = strings.ToUpper(p)
		case 1:
			p = p[:rng.IntN(len(p)+1)]
		}
		b.WriteString(p)
	}
	return b.String()
}
