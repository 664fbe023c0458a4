package compliance_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// An example password in one source's documentation is the operator's
// call: allowed there, it is embedded and counted; the same text in
// another source still escalates, and so does a real credential beside
// it in the allowed source.
func TestAllowanceIsPerSourceAndPerRule(t *testing.T) {
	t.Parallel()
	counter := compliance.NewAllowedCounter(prometheus.NewRegistry())
	checker, err := compliance.NewChecker(compliance.DefaultRules(), nil).WithAllowance(compliance.Allowance{
		BySource: map[string][]string{"docs": {"password_assignment", "url_password"}}, Allowed: counter})
	if err != nil {
		t.Fatal(err)
	}
	example := "Connect with:\n\n    DB_PASSWORD=Tr0ub4dor-and-3\n    psql postgres://app:Tr0ub4dor-and-3@db.example/app\n"
	if err := checker.Check(&messages.ChunkJob{SourceID: "docs", Text: example}); err != nil {
		t.Fatalf("an allowed example password escalated: %v", err)
	}
	var m dto.Metric
	if err := counter.WithLabelValues("docs", "password_assignment").Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got < 1 {
		t.Errorf("allowed password_assignment counted %v times, want at least 1", got)
	}
	escalates := func(source, text, rule string) {
		t.Helper()
		var ce *classify.Error
		err := checker.Check(&messages.ChunkJob{SourceID: source, Text: text})
		if !errors.As(err, &ce) || ce.Disposition != classify.Escalate || ce.Code != rule {
			t.Errorf("source %s: %v, want an escalation under %s", source, err, rule)
		}
	}
	escalates("tickets", example, "password_assignment")
	escalates("docs", example+"\naws_access_key_id = AKIA"+"ABCDEFGHIJKLMNOP\n", "aws_access_key")
	// Metadata is screened by the same allowance.
	meta := []byte(`{"password": "Tr0ub4dor-and-3"}`)
	if err := checker.Check(&messages.ChunkJob{SourceID: "docs", Text: "prose", Metadata: meta}); err != nil {
		t.Errorf("allowed password in metadata escalated: %v", err)
	}
	var ce *classify.Error
	if err := checker.Check(&messages.ChunkJob{SourceID: "tickets", Text: "prose", Metadata: meta}); !errors.As(err, &ce) || ce.Disposition != classify.Escalate {
		t.Errorf("password in another source's metadata: %v, want an escalation", err)
	}
}

// A misspelt rule name is refused with the names there are, so that an
// allowance never silently allows nothing.
func TestAllowanceRefusesUnknownRules(t *testing.T) {
	t.Parallel()
	_, err := compliance.NewChecker(compliance.DefaultRules(), nil).WithAllowance(compliance.Allowance{
		BySource: map[string][]string{"docs": {"pasword_assignment"}}})
	if err == nil || !strings.Contains(err.Error(), `"pasword_assignment"`) || !strings.Contains(err.Error(), "password_assignment") {
		t.Fatalf("unknown rule: %v, want an error naming it and the known rules", err)
	}
}
