package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// file is the policy file's layout. Every field is optional: what is
// absent falls back to the level below (source → default → flags).
type file struct {
	RetentionMandate *Duration          `yaml:"retention_mandate"`
	Default          section            `yaml:"default"`
	Sources          map[string]section `yaml:"sources"`
}

// section is one level of the policy: the default section or a source's.
type section struct {
	MaxDeliveries    *int       `yaml:"max_deliveries"`
	AmbiguousRetries *int       `yaml:"ambiguous_retries"`
	MaxReplays       *int       `yaml:"max_replays"`
	Backoff          *backoff   `yaml:"backoff"`
	Breaker          *breaker   `yaml:"breaker"`
	SoftTimeLimit    *Duration  `yaml:"soft_time_limit"`
	Rate             *rate      `yaml:"rate"`
	BudgetShare      *float64   `yaml:"budget_share"`
	Mode             *string    `yaml:"mode"`
	BatchAttempts    *int       `yaml:"batch_attempts"`
	Halt             *halt      `yaml:"halt"`
	Retention        *retention `yaml:"retention"`
	Formats          []string   `yaml:"formats"`
	SecretsAllow     []string   `yaml:"secrets_allow"`
	Records          *Records   `yaml:"records"`
	ocrKeys          `yaml:",inline"`
}

type backoff struct {
	Base *Duration `yaml:"base"`
	Max  *Duration `yaml:"max"`
}

type breaker struct {
	Failures *int      `yaml:"failures"`
	Delay    *Duration `yaml:"delay"`
}

type rate struct {
	RequestsPerMinute *int `yaml:"requests_per_minute"`
	TokensPerMinute   *int `yaml:"tokens_per_minute"`
}

type halt struct {
	RejectionRatio *float64 `yaml:"rejection_ratio"`
	MinChunks      *int     `yaml:"min_chunks"`
}

type retention struct {
	DeadLetterPayloads *Duration `yaml:"dead_letter_payloads"`
	DeadLetterHistory  *Duration `yaml:"dead_letter_history"`
	Escalations        *Duration `yaml:"escalations"`
}

// embedderWide reports the keys a source section may not set, because
// they govern the one embedder every source shares.
func (s section) embedderWide() []string {
	var keys []string
	if s.Breaker != nil {
		keys = append(keys, "breaker")
	}
	if s.Rate != nil {
		keys = append(keys, "rate")
	}
	return keys
}

// apply overlays the values s sets on base.
func (s section) apply(base Settings) Settings {
	set(&base.MaxDeliveries, s.MaxDeliveries)
	set(&base.AmbiguousRetries, s.AmbiguousRetries)
	set(&base.MaxReplays, s.MaxReplays)
	setDuration(&base.SoftTimeLimit, s.SoftTimeLimit)
	if b := s.Backoff; b != nil {
		setDuration(&base.BackoffBase, b.Base)
		setDuration(&base.BackoffMax, b.Max)
	}
	if b := s.Breaker; b != nil {
		set(&base.BreakerFailures, b.Failures)
		setDuration(&base.BreakerDelay, b.Delay)
	}
	if r := s.Rate; r != nil {
		set(&base.RequestsPerMinute, r.RequestsPerMinute)
		set(&base.TokensPerMinute, r.TokensPerMinute)
	}
	set(&base.BudgetShare, s.BudgetShare)
	set(&base.Mode, s.Mode)
	set(&base.BatchAttempts, s.BatchAttempts)
	if h := s.Halt; h != nil {
		set(&base.HaltRejectionRatio, h.RejectionRatio)
		set(&base.HaltMinChunks, h.MinChunks)
	}
	if s.SecretsAllow != nil {
		base.SecretsAllow = s.SecretsAllow
	}
	if r := s.Retention; r != nil {
		setDuration(&base.PayloadRetention, r.DeadLetterPayloads)
		setDuration(&base.EscalationRetention, r.Escalations)
		setDuration(&base.HistoryRetention, r.DeadLetterHistory)
	}
	return base
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func setDuration(dst *time.Duration, v *Duration) {
	if v != nil {
		*dst = time.Duration(*v)
	}
}

// Duration is a duration in the policy file: Go's syntax ("90s", "2m",
// "1h30m") or whole days ("90d").
type Duration time.Duration

// UnmarshalYAML parses a Duration, naming the line of a bad one.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return fmt.Errorf("line %d: %q is not a duration: write e.g. 500ms, 30s, 2m, 12h or 90d", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

var daysPattern = regexp.MustCompile(`^([0-9]+)d$`)

// ParseDuration parses Go's duration syntax or a whole number of days
// ("90d").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if m := daysPattern.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 100*365 {
			return 0, fmt.Errorf("%q: use at most 36500d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// Load reads and validates the policy file at path over defaults, the
// settings that flags and environment give. An empty path yields a table
// of defaults alone.
func Load(path string, defaults Settings, mandate time.Duration) (*Table, error) {
	if path == "" {
		return New(defaults, mandate)
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
	default:
		return nil, fmt.Errorf("POLICY_FILE %s: the policy file is YAML; name it .yaml or .yml", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("POLICY_FILE: %w", err)
	}
	return Parse(path, data, defaults, mandate)
}

// Parse decodes and validates a policy file's content; name prefixes
// every error with the line it concerns (name:line: ...).
func Parse(name string, data []byte, defaults Settings, mandate time.Duration) (*Table, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, decodeError(name, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // decoded above; this only finds lines
	if f.RetentionMandate != nil {
		mandate = time.Duration(*f.RetentionMandate)
	}
	if mandate < 0 {
		return nil, fmt.Errorf("%s:%d: retention_mandate %s: use 0 (no mandate) or more", name, lineOf(&root, "retention_mandate"), mandate)
	}
	return build(name, &root, f, defaults, mandate)
}

// build resolves and validates every section, gathering every problem.
func build(name string, root *yaml.Node, f file, defaults Settings, mandate time.Duration) (*Table, error) {
	var errs []error
	def := f.Default.apply(defaults.withUnflagged())
	if err := def.Validate(mandate); err != nil {
		errs = append(errs, located(name, lineOf(root, "default"), "default", err))
	}
	if f.Default.SecretsAllow != nil {
		errs = append(errs, located(name, lineOf(root, "default", "secrets_allow"), "default",
			errors.New("secrets_allow lets one source's chunks hold what a rule finds: set it under the source whose documents hold the false positive, so the rule still guards every other source")))
	}
	if f.Default.Records != nil {
		errs = append(errs, located(name, lineOf(root, "default", "records"), "default",
			errors.New("records describes the fields of one source's record files: set it under that source")))
	}
	if f.Default.BudgetShare != nil {
		errs = append(errs, located(name, lineOf(root, "default"), "default",
			errors.New("budget_share caps one source's part of the rate budget: set it under that source")))
	}
	t := &Table{defaults: def, sources: map[string]Settings{}, mandate: mandate}
	for source, sec := range f.Sources {
		line := lineOf(root, "sources", source)
		if err := validSourceID(source); err != nil {
			errs = append(errs, located(name, line, "source "+strconv.Quote(source), err))
			continue
		}
		if err := checkFormats(sec.Formats, nil); err != nil {
			errs = append(errs, located(name, lineOf(root, "sources", source, "formats"), "source "+strconv.Quote(source), err))
			continue
		}
		if sec.Records != nil {
			if err := sec.Records.check(); err != nil {
				errs = append(errs, located(name, lineOf(root, "sources", source, "records"), "source "+strconv.Quote(source), err))
				continue
			}
		}
		if keys := sec.embedderWide(); len(keys) > 0 {
			errs = append(errs, located(name, line, "source "+strconv.Quote(source),
				fmt.Errorf("%s govern the embedder every source shares: set them under default", strings.Join(keys, " and "))))
			continue
		}
		s := sec.apply(def)
		if err := s.Validate(mandate); err != nil {
			errs = append(errs, located(name, line, "source "+strconv.Quote(source), err))
			continue
		}
		t.sources[source] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// validSourceID matches messages.ValidateSourceID's rule without
// importing it: a source id is one NATS subject token.
func validSourceID(s string) error {
	if len(s) == 0 || len(s) > 64 || strings.ContainsAny(s, ".*> \t\r\n") {
		return errors.New("not a source id: use 1-64 characters without spaces, '.', '*' or '>'")
	}
	return nil
}

func located(name string, line int, what string, err error) error {
	var lines []string
	for _, e := range unjoin(err) {
		lines = append(lines, fmt.Sprintf("%s:%d: %s: %v", name, line, what, e))
	}
	return errors.New(strings.Join(lines, "\n"))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

var linePrefix = regexp.MustCompile(`^(?:yaml: )?line ([0-9]+): `)

// decodeError rewrites the decoder's "line N: ..." messages as
// "name:N: ...", without the Go type names that mean nothing to an
// operator.
func decodeError(name string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out []string
	for _, m := range msgs {
		m, _, _ = strings.Cut(m, " in type policy.")
		if sub := linePrefix.FindStringSubmatch(m); sub != nil {
			out = append(out, fmt.Sprintf("%s:%s: %s", name, sub[1], m[len(sub[0]):]))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", name, strings.TrimPrefix(m, "yaml: ")))
	}
	return errors.New(strings.Join(out, "\n"))
}

// lineOf finds the line of the key at path in a decoded document, or 1.
func lineOf(root *yaml.Node, path ...string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 1
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}
