package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/policy"
)

const day = 24 * time.Hour

func defaults() policy.Settings {
	return policy.Settings{MaxDeliveries: 5, AmbiguousRetries: 2, MaxReplays: 3,
		BackoffBase: time.Second, BackoffMax: 2 * time.Minute, BreakerFailures: 5, BreakerDelay: 10 * time.Second,
		SoftTimeLimit: time.Minute, HaltMinChunks: 100, PayloadRetention: 90 * day, EscalationRetention: policy.DefaultEscalationRetention,
		HistoryRetention: policy.DefaultHistoryRetention, BudgetShare: policy.DefaultBudgetShare,
		Mode: policy.ModeLive, BatchAttempts: policy.DefaultBatchAttempts}
}

const example = `
retention_mandate: 2555d
default:
  max_deliveries: 4
  backoff: {base: 200ms, max: 30s}
  breaker: {failures: 3, delay: 5s}
  rate: {requests_per_minute: 600, tokens_per_minute: 100000}
  halt: {rejection_ratio: 0.4, min_chunks: 50}
sources:
  flaky-portal:
    max_deliveries: 2
    ambiguous_retries: 1
  overnight-batch:
    max_deliveries: 6
    max_replays: 5
    soft_time_limit: 5m
    retention: {dead_letter_payloads: 30d, dead_letter_history: 60d, escalations: 3000d}
`

func TestParseResolvesEachSourceOverDefaultOverFlags(t *testing.T) {
	t.Parallel()
	tab, err := policy.Parse("p.yaml", []byte(example), defaults(), policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		source string
		check  func(policy.Settings) bool
		want   string
	}{
		{"unknown-source", func(s policy.Settings) bool { return s.MaxDeliveries == 4 && s.AmbiguousRetries == 2 }, "default section over flags"},
		{"unknown-source", func(s policy.Settings) bool {
			return s.BackoffBase == 200*time.Millisecond && s.BackoffMax == 30*time.Second
		}, "backoff from the file"},
		{"unknown-source", func(s policy.Settings) bool { return s.MaxReplays == 3 && s.SoftTimeLimit == time.Minute }, "flags where the file is silent"},
		{"flaky-portal", func(s policy.Settings) bool { return s.MaxDeliveries == 2 && s.AmbiguousRetries == 1 }, "source section wins"},
		{"flaky-portal", func(s policy.Settings) bool { return s.HaltRejectionRatio == 0.4 && s.HaltMinChunks == 50 }, "source inherits the default section"},
		{"overnight-batch", func(s policy.Settings) bool {
			return s.MaxDeliveries == 6 && s.MaxReplays == 5 && s.SoftTimeLimit == 5*time.Minute
		}, "own caps"},
		{"overnight-batch", func(s policy.Settings) bool {
			return s.PayloadRetention == 30*day && s.HistoryRetention == 60*day && s.EscalationRetention == 3000*day
		}, "own retention in days"},
		{"flaky-portal", func(s policy.Settings) bool { return s.HistoryRetention == policy.DefaultHistoryRetention }, "history retention from the default"},
		{"overnight-batch", func(s policy.Settings) bool { return s.RequestsPerMinute == 600 && s.BreakerFailures == 3 }, "embedder-wide values visible everywhere"},
	}
	for _, tt := range tests {
		if s := tab.For(tt.source); !tt.check(s) {
			t.Errorf("%s: %s: got %+v", tt.source, tt.want, s)
		}
	}
	if got := tab.Longest(func(s policy.Settings) time.Duration { return s.SoftTimeLimit }); got != 5*time.Minute {
		t.Errorf("Longest soft time limit = %s, want 5m", got)
	}
	if got := strings.Join(tab.Sources(), ","); got != "flaky-portal,overnight-batch" {
		t.Errorf("Sources = %s", got)
	}
}

func TestParseRejectsBadFilesWithFileAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"unknown top-level key", "defaults:\n  max_deliveries: 3\n", []string{"p.yaml:1:", `field defaults not found`}},
		{"unknown key in a source", "sources:\n  a:\n    max_delivery: 3\n", []string{"p.yaml:3:", "max_delivery"}},
		{"unknown nested key", "default:\n  backoff:\n    ceiling: 3s\n", []string{"p.yaml:3:", "ceiling"}},
		{"wrong type", "default:\n  max_deliveries: lots\n", []string{"p.yaml:2:", "lots"}},
		{"bad duration", "default:\n  backoff:\n    base: soon\n", []string{"p.yaml:3:", `"soon" is not a duration`, "90d"}},
		{"syntax error", "default:\n  max_deliveries: [\n", []string{"p.yaml:"}},
		{"cap zero", "sources:\n  a:\n    max_deliveries: 0\n", []string{"p.yaml:2:", `source "a"`, "max_deliveries 0: use at least 1"}},
		{"ambiguous not below cap", "sources:\n  a:\n    max_deliveries: 2\n    ambiguous_retries: 2\n", []string{"p.yaml:2:", "ambiguous_retries 2: use 0..1"}},
		{"backoff max below base", "default:\n  backoff: {base: 1m, max: 1s}\n", []string{"p.yaml:1:", "default", "backoff base 1m0s, max 1s"}},
		{"ratio out of range", "default:\n  halt: {rejection_ratio: 1.5}\n", []string{"halt rejection_ratio 1.5"}},
		{"no history", "default:\n  retention: {dead_letter_history: 0s}\n", []string{"p.yaml:1:", "retention dead_letter_history 0s: use a positive duration"}},
		{"escalations below mandate", "sources:\n  a:\n    retention: {escalations: 90d}\n", []string{"p.yaml:2:", "escalations 90d is below the retention mandate 2555d"}},
		{"breaker per source", "sources:\n  a:\n    breaker: {failures: 2}\n", []string{"p.yaml:2:", "breaker govern the embedder", "under default"}},
		{"rate per source", "sources:\n  a:\n    rate: {requests_per_minute: 2}\n", []string{"rate govern the embedder"}},
		{"bad source id", "sources:\n  a.b:\n    max_deliveries: 2\n", []string{"p.yaml:2:", "not a source id"}},
		{"negative mandate", "retention_mandate: -1h\n", []string{"retention_mandate -1h0m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := policy.Parse("p.yaml", []byte(tt.doc), defaults(), policy.DefaultRetentionMandate)
			if err == nil {
				t.Fatal("bad policy accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoweredMandateAdmitsShorterEscalationRetention(t *testing.T) {
	t.Parallel()
	doc := "retention_mandate: 365d\nsources:\n  a:\n    retention: {escalations: 400d}\n"
	tab, err := policy.Parse("p.yaml", []byte(doc), defaults(), policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Mandate() != 365*day || tab.For("a").EscalationRetention != 400*day {
		t.Fatalf("mandate %s, escalations %s", tab.Mandate(), tab.For("a").EscalationRetention)
	}
}

func TestEmptyFileAndNoFileMeanTheDefaults(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# nothing yet\n"} {
		tab, err := policy.Parse("p.yaml", []byte(doc), defaults(), policy.DefaultRetentionMandate)
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if !reflect.DeepEqual(tab.For("x"), defaults()) {
			t.Errorf("%q: For(x) = %+v", doc, tab.For("x"))
		}
	}
	tab, err := policy.Load("", defaults(), policy.DefaultRetentionMandate)
	if err != nil || !reflect.DeepEqual(tab.For("x"), defaults()) {
		t.Fatalf("Load(\"\") = %v, %v", tab, err)
	}
}

func TestLoadNamesTheFileAndWantsYAML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := policy.Load(filepath.Join(dir, "p.toml"), defaults(), 0); err == nil || !strings.Contains(err.Error(), ".yaml") {
		t.Errorf("a .toml file: err = %v", err)
	}
	if _, err := policy.Load(filepath.Join(dir, "missing.yaml"), defaults(), 0); err == nil || !strings.Contains(err.Error(), "POLICY_FILE") {
		t.Errorf("a missing file: err = %v", err)
	}
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("sources:\n  a:\n    max_deliveries: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Load(path, defaults(), 0); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("err = %v; want it to start with %s:2:", err, path)
	}
}

func TestTheExampleFileIsValid(t *testing.T) {
	t.Parallel()
	if _, err := policy.Load("../../../deploy/policy.example.yaml", defaults(), policy.DefaultRetentionMandate); err != nil {
		t.Fatal(err)
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90d", 90 * day, true}, {"2555d", 2555 * day, true}, {"1h30m", 90 * time.Minute, true},
		{"250ms", 250 * time.Millisecond, true}, {"d", 0, false}, {"1.5d", 0, false}, {"99999d", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, err := policy.ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// The history retention has no flag: a service's defaults leave it zero,
// and the table fills in DefaultHistoryRetention, whether or not a file
// is read.
func TestHistoryRetentionDefaultsWithoutAFlag(t *testing.T) {
	t.Parallel()
	flags := defaults()
	flags.HistoryRetention = 0
	parsed, err := policy.Parse("p.yaml", []byte("sources:\n  a:\n    max_replays: 2\n"), flags, policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := policy.New(flags, policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]policy.Settings{"file, source a": parsed.For("a"), "file, default": parsed.For("b"), "no file": plain.For("a")} {
		if s.HistoryRetention != policy.DefaultHistoryRetention {
			t.Errorf("%s: history retention %s, want %s", name, s.HistoryRetention, policy.DefaultHistoryRetention)
		}
	}
}

// Bounds lays out one retention setting per source for a statement, the
// default section's for every other source.
func TestBoundsListEachSourceAndTheDefault(t *testing.T) {
	t.Parallel()
	tab, err := policy.Parse("p.yaml", []byte(example), defaults(), policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	b := tab.Bounds(policy.HistoryRetention)
	if got := strings.Join(b.Sources, ","); got != "flaky-portal,overnight-batch" {
		t.Fatalf("sources %s", got)
	}
	if b.Seconds[0] != policy.DefaultHistoryRetention.Seconds() || b.Seconds[1] != (60*day).Seconds() || b.Default != policy.DefaultHistoryRetention.Seconds() {
		t.Errorf("seconds %v, default %v", b.Seconds, b.Default)
	}
	if b.Shortest() != (60 * day).Seconds() {
		t.Errorf("shortest %v, want 60 days", b.Shortest())
	}
	if e := tab.Bounds(policy.EscalationRetention); e.Shortest() != policy.DefaultEscalationRetention.Seconds() || e.Seconds[1] != (3000*day).Seconds() {
		t.Errorf("escalation bounds %+v", e)
	}
	if p := tab.Bounds(policy.PayloadRetention); p.Seconds[1] != (30*day).Seconds() || p.Default != (90*day).Seconds() {
		t.Errorf("payload bounds %+v", p)
	}
}

// A source's budget_share caps its part of the rate budget; the others
// keep the default, which caps nothing.
func TestBudgetShareCapsASource(t *testing.T) {
	t.Parallel()
	tab, err := policy.Parse("p.yaml", []byte("sources:\n  backfill:\n    budget_share: 0.2\n"), defaults(), policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.For("backfill").BudgetShare; got != 0.2 {
		t.Errorf("backfill's budget share %g, want 0.2", got)
	}
	if got := tab.For("live").BudgetShare; got != 1 {
		t.Errorf("another source's budget share %g, want 1 (uncapped)", got)
	}
	for _, bad := range []string{"0", "1.5", "-0.1"} {
		_, err := policy.Parse("p.yaml", []byte("sources:\n  backfill:\n    budget_share: "+bad+"\n"), defaults(), policy.DefaultRetentionMandate)
		if err == nil || !strings.Contains(err.Error(), "p.yaml:2") || !strings.Contains(err.Error(), "budget_share") {
			t.Errorf("budget_share %s: %v, want an error naming the source's line and the key", bad, err)
		}
	}
}

func TestBudgetShareBelongsToASource(t *testing.T) {
	t.Parallel()
	_, err := policy.Parse("p.yaml", []byte("default:\n  budget_share: 0.5\n"), defaults(), policy.DefaultRetentionMandate)
	if err == nil || !strings.Contains(err.Error(), "set it under that source") {
		t.Fatalf("budget_share under default: %v, want an error saying to set it on a source", err)
	}
}

// A source in bulk mode says so, with its batch attempts; the others
// stay live, and a mode or attempt count that means nothing is refused
// on its line.
func TestBatchModeIsASourceSetting(t *testing.T) {
	t.Parallel()
	tab, err := policy.Parse("p.yaml", []byte("sources:\n  archive:\n    mode: batch\n    batch_attempts: 3\n"), defaults(), policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	if s := tab.For("archive"); s.Mode != policy.ModeBatch || s.BatchAttempts != 3 {
		t.Errorf("archive: mode %q, batch attempts %d; want batch, 3", s.Mode, s.BatchAttempts)
	}
	if s := tab.For("live"); s.Mode != policy.ModeLive || s.BatchAttempts != policy.DefaultBatchAttempts {
		t.Errorf("another source: mode %q, batch attempts %d; want live, %d", s.Mode, s.BatchAttempts, policy.DefaultBatchAttempts)
	}
	for _, bad := range []string{"mode: bulk", "batch_attempts: -1"} {
		_, err := policy.Parse("p.yaml", []byte("sources:\n  archive:\n    "+bad+"\n"), defaults(), policy.DefaultRetentionMandate)
		if err == nil || !strings.Contains(err.Error(), "p.yaml:2") || !strings.Contains(err.Error(), strings.Split(bad, ":")[0]) {
			t.Errorf("%s: %v, want an error naming the source's line and the key", bad, err)
		}
	}
}

// A source's formats list narrows what its runs read; the default
// section's serves the others, and a name the reader does not know is
// refused with its file and line.
func TestParseFormats(t *testing.T) {
	t.Parallel()
	known := func(f string) error {
		if f == "text" || f == "markdown" || f == "pdf" {
			return nil
		}
		return errors.New("unknown format " + f)
	}
	f, err := policy.ParseFormats("p.yaml", []byte(`
default:
  formats: [text, markdown]
sources:
  manuals:
    formats: [pdf]
  wiki:
    max_deliveries: 3
`), known)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.For("manuals"); !slices.Equal(got, []string{"pdf"}) {
		t.Errorf("manuals = %q", got)
	}
	if got := f.For("wiki"); !slices.Equal(got, []string{"text", "markdown"}) {
		t.Errorf("wiki = %q, want the default section's", got)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"sources:\n  manuals:\n    formats: [pdff]\n", `p.yaml:3: source "manuals": formats: unknown format pdff`},
		{"default:\n  formats: [text, text]\n", `p.yaml:2: default: formats: "text" is listed twice`},
		{"sources:\n  manuals:\n    formats: []\n", `p.yaml:3: source "manuals": formats is empty`},
		{"sources:\n  manuals:\n    format: [pdf]\n", `p.yaml:3: field format not found`},
	} {
		if _, err := policy.ParseFormats("p.yaml", []byte(tc.yaml), known); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := policy.Parse("p.yaml", []byte("sources:\n  manuals:\n    formats: [pdf, pdf]\n"), defaults(), policy.DefaultRetentionMandate); err == nil {
		t.Error("Parse accepts a format listed twice")
	}
}

// secrets_allow belongs to the source whose documents hold a false
// positive; set under default it would allow the rule everywhere, so it
// is refused there with its line.
func TestSecretsAllowIsASourceSetting(t *testing.T) {
	t.Parallel()
	tab, err := policy.Parse("p.yaml", []byte("sources:\n  docs:\n    secrets_allow: [password_assignment]\n"), defaults(), policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.For("docs").SecretsAllow; !slices.Equal(got, []string{"password_assignment"}) {
		t.Errorf("docs allows %v", got)
	}
	if got := tab.For("tickets").SecretsAllow; got != nil {
		t.Errorf("a source without a section allows %v", got)
	}
	_, err = policy.Parse("p.yaml", []byte("default:\n  secrets_allow: [password_assignment]\n"), defaults(), policy.DefaultRetentionMandate)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:2:") || !strings.Contains(err.Error(), "under the source") {
		t.Fatalf("secrets_allow under default: %v", err)
	}
}

// A records schema is a source's: the producer reads it per source, an
// empty text list is refused with its line, and so is one under default.
func TestRecordsIsASourceSetting(t *testing.T) {
	t.Parallel()
	f, err := policy.ParseFormats("p.yaml", []byte("sources:\n  people:\n    records: {id: id, text: [name, bio], metadata: [team], required: [name]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Records{ID: "id", Text: []string{"name", "bio"}, Metadata: []string{"team"}, Required: []string{"name"}}
	if got, ok := f.Records("people"); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("people's records %+v (%v), want %+v", got, ok, want)
	}
	if _, ok := f.Records("tickets"); ok {
		t.Error("a source without a section has a records schema")
	}
	for name, body := range map[string]string{
		"no text":    "sources:\n  people:\n    records: {id: id}\n",
		"in default": "default:\n  records: {text: [body]}\n",
	} {
		_, err := policy.Parse("p.yaml", []byte(body), defaults(), policy.DefaultRetentionMandate)
		if err == nil || !strings.Contains(err.Error(), "p.yaml:") || !strings.Contains(err.Error(), "records") {
			t.Errorf("%s: %v, want an error naming the line and records", name, err)
		}
	}
	if _, err := policy.ParseFormats("p.yaml", []byte("sources:\n  people:\n    records: {id: id}\n"), nil); err == nil || !strings.Contains(err.Error(), "p.yaml:3:") {
		t.Errorf("the producer took a schema without text: %v", err)
	}
}

// A source's OCR settings come from its section over the default
// section over the defaults (0.80, document, eng), and a value that has
// no meaning is refused with its file and line.
func TestOCRSettingsPerSource(t *testing.T) {
	t.Parallel()
	f, err := policy.ParseFormats("p.yaml", []byte(`
default:
  ocr_languages: [eng, deu]
sources:
  branch-office:
    ocr_min_confidence: 0.6
    ocr_scope: page
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := policy.OCR{MinConfidence: 0.6, Scope: policy.OCRScopePage, Languages: []string{"eng", "deu"}}
	if got := f.OCR("branch-office"); !reflect.DeepEqual(got, want) {
		t.Errorf("branch-office: %+v, want %+v", got, want)
	}
	want = policy.OCR{MinConfidence: 0.80, Scope: policy.OCRScopeDocument, Languages: []string{"eng", "deu"}}
	if got := f.OCR("permits"); !reflect.DeepEqual(got, want) {
		t.Errorf("a source without a section: %+v, want %+v", got, want)
	}
	none, err := policy.ParseFormats("p.yaml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = policy.OCR{MinConfidence: 0.80, Scope: policy.OCRScopeDocument, Languages: []string{"eng"}}
	if got := none.OCR("permits"); !reflect.DeepEqual(got, want) {
		t.Errorf("no file: %+v, want %+v", got, want)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"sources:\n  a:\n    ocr_min_confidence: 80\n", `p.yaml:3: source "a": ocr_min_confidence 80: use a fraction above 0 and at most 1`},
		{"default:\n  ocr_scope: pages\n", `p.yaml:2: default: ocr_scope "pages": use document`},
		{"sources:\n  a:\n    max_replays: 1\n    ocr_languages: []\n", `p.yaml:4: source "a": ocr_languages is empty`},
	} {
		if _, err := policy.ParseFormats("p.yaml", []byte(tc.yaml), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
