package embedsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Faults scripts what the server does wrong. The zero value is a healthy
// server. A Faults is a plain value: Server.SetFaults swaps it atomically
// while the server runs.
type Faults struct {
	// Sequences give matching inputs a scripted series of outcomes.
	Sequences []SequenceRule
	// Poison rules reject or corrupt matching inputs on every request.
	Poison []PoisonRule

	// Rate429 is the probability, per request, of a 429 with Retry-After.
	Rate429 float64
	// Rate5xx is the probability, per request, of a 500, 502 or 503.
	Rate5xx float64
	// RateHang is the probability, per request, that the server stalls for
	// HangFor (or until the client goes away) before answering.
	RateHang float64
	// RateReset is the probability, per request, that the server closes the
	// TCP connection without answering.
	RateReset float64

	// RetryAfterSeconds is the Retry-After header sent with every 429.
	// Defaults to 1; negative sends no header.
	RetryAfterSeconds int
	// HangFor is how long a hang lasts. Defaults to 30s, longer than any
	// sane client timeout.
	HangFor time.Duration

	// OutageStart and OutageDuration place a window, relative to the
	// server's start, in which every request gets a 503. No outage when
	// OutageDuration is zero.
	OutageStart, OutageDuration time.Duration

	// MaxInputChars rejects any input longer than this many characters with
	// 400 context_length_exceeded. Zero means no limit.
	MaxInputChars int

	// Latency is added to every request.
	Latency Latency
}

// SequenceRule scripts the outcomes of the inputs it matches. Each distinct
// matching input (keyed by a hash of its text) walks its own copy of the
// sequence, one step per request that contains it; the last step then
// repeats. A step other than 200 fails the whole request, as a real API
// would.
type SequenceRule struct {
	// Match is a substring of the input, or a regular expression when Regex
	// is set.
	Match string
	// Regex makes Match a regular expression (RE2 syntax).
	Regex bool
	// Sequence is a comma-separated list of steps: HTTP status codes, "hang"
	// or "reset". Example: "503,503,200".
	Sequence string
}

// PoisonKind is what a poison rule does to a matching input.
type PoisonKind string

// Poison kinds.
const (
	// PoisonInvalidInput rejects the request with 400 invalid_input.
	PoisonInvalidInput PoisonKind = "invalid_input"
	// PoisonContextLength rejects the request with 400
	// context_length_exceeded, as if the input were too long.
	PoisonContextLength PoisonKind = "context_length"
	// PoisonWrongDims answers with a vector of the wrong dimension for the
	// input.
	PoisonWrongDims PoisonKind = "wrong_dims"
	// PoisonNaN answers with a NaN in the input's vector.
	PoisonNaN PoisonKind = "nan"
)

// PoisonRule makes every input it matches misbehave.
type PoisonRule struct {
	// Match is a substring of the input, or a regular expression when Regex
	// is set.
	Match string
	// Regex makes Match a regular expression (RE2 syntax).
	Regex bool
	// Kind is what happens to a matching input.
	Kind PoisonKind
	// Model, when set, limits the rule to requests naming that model: one
	// model rejects an input another takes (a shorter context, another
	// tokenizer), as when an index moves to a new model.
	Model string
}

// Step outcomes that are not HTTP statuses.
const (
	stepHang  = -1
	stepReset = -2
)

const defaultHangFor = 30 * time.Second

// Validate reports the first problem with f, saying how to fix it.
func (f Faults) Validate() error {
	_, err := f.compile()
	return err
}

// applyDefaults fills f with its zero-valued knobs resolved.
func (f *Faults) applyDefaults() {
	if f.RetryAfterSeconds == 0 {
		f.RetryAfterSeconds = 1
	}
	if f.HangFor == 0 {
		f.HangFor = defaultHangFor
	}
}

// faultSet is a Faults ready for the request path: patterns compiled,
// sequences parsed.
type faultSet struct {
	Faults
	sequences []compiledSequence
	poison    []compiledPoison
}

type compiledSequence struct {
	match matcher
	steps []int
}

type compiledPoison struct {
	match matcher
	kind  PoisonKind
	model string
}

func (f Faults) compile() (*faultSet, error) {
	f.applyDefaults()
	for name, rate := range map[string]float64{
		"rate_429": f.Rate429, "rate_5xx": f.Rate5xx, "rate_hang": f.RateHang, "rate_reset": f.RateReset,
	} {
		if rate < 0 || rate > 1 {
			return nil, fmt.Errorf("faults: %s = %v, want a probability in [0, 1]", name, rate)
		}
	}
	if f.HangFor < 0 || f.OutageStart < 0 || f.OutageDuration < 0 {
		return nil, errors.New("faults: hang_for, outage start and outage duration must not be negative")
	}
	if f.MaxInputChars < 0 {
		return nil, errors.New("faults: max_input_chars must not be negative (0 means no limit)")
	}
	if err := f.Latency.Validate(); err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	fs := &faultSet{Faults: f}
	for i, r := range f.Sequences {
		m, err := newMatcher(r.Match, r.Regex)
		if err != nil {
			return nil, fmt.Errorf("faults: sequence %d: %w", i, err)
		}
		steps, err := parseSteps(r.Sequence)
		if err != nil {
			return nil, fmt.Errorf("faults: sequence %d: %w", i, err)
		}
		fs.sequences = append(fs.sequences, compiledSequence{match: m, steps: steps})
	}
	for i, r := range f.Poison {
		m, err := newMatcher(r.Match, r.Regex)
		if err != nil {
			return nil, fmt.Errorf("faults: poison %d: %w", i, err)
		}
		switch r.Kind {
		case PoisonInvalidInput, PoisonContextLength, PoisonWrongDims, PoisonNaN:
		default:
			return nil, fmt.Errorf("faults: poison %d: kind %q, want one of invalid_input, context_length, wrong_dims, nan", i, r.Kind)
		}
		fs.poison = append(fs.poison, compiledPoison{match: m, kind: r.Kind, model: r.Model})
	}
	return fs, nil
}

func parseSteps(s string) ([]int, error) {
	var steps []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		switch part {
		case "hang":
			steps = append(steps, stepHang)
			continue
		case "reset":
			steps = append(steps, stepReset)
			continue
		}
		code, err := strconv.Atoi(part)
		if err != nil || http.StatusText(code) == "" || code < 200 {
			return nil, fmt.Errorf("step %q: want an HTTP status code, \"hang\" or \"reset\"", part)
		}
		steps = append(steps, code)
	}
	if len(steps) == 0 {
		return nil, errors.New("empty sequence: want e.g. \"503,503,200\"")
	}
	return steps, nil
}

// matcher matches input text by substring or regular expression.
type matcher struct {
	sub string
	re  *regexp.Regexp
}

func newMatcher(pattern string, isRegex bool) (matcher, error) {
	if pattern == "" {
		return matcher{}, errors.New("match must not be empty")
	}
	if !isRegex {
		return matcher{sub: pattern}, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return matcher{}, fmt.Errorf("match %q: %w", pattern, err)
	}
	return matcher{re: re}, nil
}

func (m matcher) matches(text string) bool {
	if m.re != nil {
		return m.re.MatchString(text)
	}
	return strings.Contains(text, m.sub)
}

// faultsFile is the JSON form of Faults: durations are strings such as
// "1.5s", and unknown keys are errors so that a typo in a drill fails loudly.
type faultsFile struct {
	Sequences []struct {
		Match    string `json:"match"`
		Regex    bool   `json:"regex"`
		Sequence string `json:"sequence"`
	} `json:"sequences"`
	Poison []struct {
		Match string     `json:"match"`
		Regex bool       `json:"regex"`
		Kind  PoisonKind `json:"kind"`
		Model string     `json:"model"`
	} `json:"poison"`
	Rate429           float64 `json:"rate_429"`
	Rate5xx           float64 `json:"rate_5xx"`
	RateHang          float64 `json:"rate_hang"`
	RateReset         float64 `json:"rate_reset"`
	RetryAfterSeconds int     `json:"retry_after_seconds"`
	HangFor           string  `json:"hang_for"`
	Outage            struct {
		Start    string `json:"start"`
		Duration string `json:"duration"`
	} `json:"outage"`
	MaxInputChars int    `json:"max_input_chars"`
	Latency       string `json:"latency"`
}

// LoadFaults reads a faults file. See ParseFaults for the format.
func LoadFaults(path string) (Faults, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Faults{}, fmt.Errorf("load faults: %w", err)
	}
	f, err := ParseFaults(data)
	if err != nil {
		return Faults{}, fmt.Errorf("load faults %s: %w", path, err)
	}
	return f, nil
}

// ParseFaults decodes the JSON form of Faults:
//
//	{
//	  "sequences": [{"match": "flaky", "regex": false, "sequence": "503,503,200"}],
//	  "poison": [{"match": "^POISON", "regex": true, "kind": "invalid_input"}],
//	  "rate_429": 0.01, "rate_5xx": 0.01, "rate_hang": 0, "rate_reset": 0,
//	  "retry_after_seconds": 1, "hang_for": "30s",
//	  "outage": {"start": "10s", "duration": "20s"},
//	  "max_input_chars": 8000,
//	  "latency": "lognormal:10ms,200ms"
//	}
//
// Every key is optional; unknown keys are errors.
func ParseFaults(data []byte) (Faults, error) {
	var ff faultsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		return Faults{}, fmt.Errorf("parse faults: %w", err)
	}
	f := Faults{
		Rate429:           ff.Rate429,
		Rate5xx:           ff.Rate5xx,
		RateHang:          ff.RateHang,
		RateReset:         ff.RateReset,
		RetryAfterSeconds: ff.RetryAfterSeconds,
		MaxInputChars:     ff.MaxInputChars,
	}
	for _, s := range ff.Sequences {
		f.Sequences = append(f.Sequences, SequenceRule{Match: s.Match, Regex: s.Regex, Sequence: s.Sequence})
	}
	for _, p := range ff.Poison {
		f.Poison = append(f.Poison, PoisonRule{Match: p.Match, Regex: p.Regex, Kind: p.Kind, Model: p.Model})
	}
	var err error
	for _, d := range []struct {
		name string
		text string
		dst  *time.Duration
	}{
		{"hang_for", ff.HangFor, &f.HangFor},
		{"outage.start", ff.Outage.Start, &f.OutageStart},
		{"outage.duration", ff.Outage.Duration, &f.OutageDuration},
	} {
		if d.text == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.text); err != nil {
			return Faults{}, fmt.Errorf("parse faults: %s: %w", d.name, err)
		}
	}
	if f.Latency, err = ParseLatency(ff.Latency); err != nil {
		return Faults{}, fmt.Errorf("parse faults: %w", err)
	}
	return f, f.Validate()
}
