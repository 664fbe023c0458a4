package embedsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// LatencyDist names a latency distribution.
type LatencyDist string

// Latency distributions.
const (
	// LatencyNone adds no latency.
	LatencyNone LatencyDist = ""
	// LatencyFixed adds Latency.Value to every request.
	LatencyFixed LatencyDist = "fixed"
	// LatencyUniform draws uniformly from [Latency.Min, Latency.Max].
	LatencyUniform LatencyDist = "uniform"
	// LatencyLogNormal draws from a log-normal distribution with the given
	// Latency.Median and Latency.P99, the long tail real providers show.
	LatencyLogNormal LatencyDist = "lognormal"
)

// Latency is the extra time the server waits before answering a request.
// The zero value adds nothing. Its text form, accepted by ParseLatency and
// in a faults file, is "fixed:5ms", "uniform:1ms-20ms" or
// "lognormal:10ms,200ms" (median, p99).
type Latency struct {
	// Dist selects the distribution and which fields below apply.
	Dist LatencyDist
	// Value is the fixed latency.
	Value time.Duration
	// Min and Max bound the uniform distribution.
	Min, Max time.Duration
	// Median and P99 shape the log-normal distribution.
	Median, P99 time.Duration
}

// ParseLatency parses the text form of a Latency. An empty string or "none"
// is no latency.
func ParseLatency(s string) (Latency, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return Latency{}, nil
	}
	kind, args, ok := strings.Cut(s, ":")
	if !ok {
		return Latency{}, fmt.Errorf("latency %q: want fixed:D, uniform:MIN-MAX or lognormal:MEDIAN,P99", s)
	}
	var l Latency
	var err error
	switch LatencyDist(kind) {
	case LatencyFixed:
		l = Latency{Dist: LatencyFixed}
		l.Value, err = time.ParseDuration(args)
	case LatencyUniform:
		l = Latency{Dist: LatencyUniform}
		l.Min, l.Max, err = parseDurationPair(args, "-")
	case LatencyLogNormal:
		l = Latency{Dist: LatencyLogNormal}
		l.Median, l.P99, err = parseDurationPair(args, ",")
	default:
		return Latency{}, fmt.Errorf("latency %q: unknown distribution %q (want fixed, uniform or lognormal)", s, kind)
	}
	if err != nil {
		return Latency{}, fmt.Errorf("latency %q: %w", s, err)
	}
	return l, l.Validate()
}

func parseDurationPair(s, sep string) (a, b time.Duration, err error) {
	x, y, ok := strings.Cut(s, sep)
	if !ok {
		return 0, 0, fmt.Errorf("want two durations separated by %q", sep)
	}
	if a, err = time.ParseDuration(strings.TrimSpace(x)); err != nil {
		return 0, 0, err
	}
	if b, err = time.ParseDuration(strings.TrimSpace(y)); err != nil {
		return 0, 0, err
	}
	return a, b, nil
}

// String returns the text form accepted by ParseLatency.
func (l Latency) String() string {
	switch l.Dist {
	case LatencyFixed:
		return fmt.Sprintf("fixed:%s", l.Value)
	case LatencyUniform:
		return fmt.Sprintf("uniform:%s-%s", l.Min, l.Max)
	case LatencyLogNormal:
		return fmt.Sprintf("lognormal:%s,%s", l.Median, l.P99)
	}
	return "none"
}

// Validate reports a distribution whose parameters cannot be sampled.
func (l Latency) Validate() error {
	switch l.Dist {
	case LatencyNone:
		return nil
	case LatencyFixed:
		if l.Value < 0 {
			return fmt.Errorf("latency %s: value must not be negative", l)
		}
	case LatencyUniform:
		if l.Min < 0 || l.Max < l.Min {
			return fmt.Errorf("latency %s: want 0 <= min <= max", l)
		}
	case LatencyLogNormal:
		if l.Median <= 0 || l.P99 < l.Median {
			return fmt.Errorf("latency %s: want 0 < median <= p99", l)
		}
	default:
		return fmt.Errorf("latency: unknown distribution %q (want fixed, uniform or lognormal)", l.Dist)
	}
	return nil
}

// z99 is the standard normal quantile at 0.99.
const z99 = 2.326347874

// sample draws one latency. rng is only touched by distributions that need
// it, so adding a fixed latency does not shift the fault draws.
func (l Latency) sample(rng *rand.Rand) time.Duration {
	switch l.Dist {
	case LatencyFixed:
		return l.Value
	case LatencyUniform:
		if l.Max == l.Min {
			return l.Min
		}
		return l.Min + time.Duration(rng.Int64N(int64(l.Max-l.Min)+1))
	case LatencyLogNormal:
		mu := math.Log(float64(l.Median))
		sigma := (math.Log(float64(l.P99)) - mu) / z99
		return time.Duration(math.Exp(mu + sigma*rng.NormFloat64()))
	}
	return 0
}
