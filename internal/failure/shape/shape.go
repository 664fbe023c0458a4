package shape

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Shape codes of the DLQ (the by-source shape drill): what the distribution of dead
// letters across sources says about their cause.
const (
	Quiet     = "quiet"
	Trickle   = "trickle"
	Provider  = "provider"
	OneSource = "one_source"
	// ScansOneSource is a one-source spike made mostly of scans below
	// the source's OCR bar (ocr_low_confidence): its scanner, or its bar,
	// changed.
	ScansOneSource = "scans_one_source"
	EverySource    = "every_source"
	Mixed          = "mixed"
)

// Labels are the human labels of the shape codes.
var Labels = map[string]string{
	Quiet:          "quiet",
	Trickle:        "trickle across sources (data quality)",
	Provider:       "provider incident (a spike of transient failures, not a source change)",
	OneSource:      "spike in one source (that source changed)",
	ScansOneSource: "scans below the bar in one source (its scanner or its OCR bar changed)",
	EverySource:    "spike in every source (our deployment changed)",
	Mixed:          "mixed: some sources spike, not most (compare what they share)",
}

// Thresholds tune Label.
type Thresholds struct {
	// SpikeCount is the number of dead letters in the window at or above
	// which a source counts as spiking. Defaults to 20 (--spike).
	SpikeCount int `json:"spike_count"`
	// OneSourceShare is the share of the window's dead letters a spiking
	// source must hold for the spike to be that source's alone. Defaults to
	// 0.7 (--one-source-share).
	OneSourceShare float64 `json:"one_source_share"`
	// EverySourceShare is the share of active sources that must spike for
	// the spike to be everyone's. Defaults to 0.6 (--every-source-share).
	EverySourceShare float64 `json:"every_source_share"`
}

// DefaultThresholds are the thresholds `sluice dlq report` and the console
// use unless told otherwise.
var DefaultThresholds = Thresholds{SpikeCount: 20, OneSourceShare: 0.7, EverySourceShare: 0.6}

// Verdict is Label's reading of a window.
type Verdict struct {
	// Code is one of the shape constants, for machines.
	Code string `json:"code"`
	// Label is the human reading of Code.
	Label string `json:"label"`
	// Reason gives the numbers behind the verdict.
	Reason string `json:"reason"`
	// Source is the spiking source of a one_source shape.
	Source string `json:"source,omitempty"`
	// Spiking lists the sources at or above SpikeCount, sorted.
	Spiking []string `json:"spiking_sources"`
}

// Window is a window of dead letters: for each active source (a source
// that ran in the window, even without dead letters, whose map is then
// empty), its dead letters by error class.
type Window map[string]map[string]int

// Label reads the shape of a window of dead letters from how they spread
// across active sources and what their error classes say. The rules,
// first match wins:
//
//  1. no dead letters: quiet;
//  2. some source reaches SpikeCount, but none would without its
//     exhausted transient failures (classify.ExhaustedTransientClasses:
//     the provider or the network failed, not the chunks): provider
//     incident, whichever sources it hit;
//  3. the largest source reaches SpikeCount and holds at least
//     OneSourceShare of all: spike in one source, or scans below the bar
//     in one source when at least OneSourceShare of its dead letters
//     are ocr_low_confidence (a new scanner at one branch office);
//  4. at least two sources, and at least EverySourceShare of the active
//     sources, reach SpikeCount: spike in every source;
//  5. no source reaches SpikeCount: trickle across sources;
//  6. otherwise: mixed.
//
// With a single active source rules 3 and 4 cannot be told apart; rule 3
// wins, since "that source changed" is the narrower claim.
func Label(w Window, th Thresholds) Verdict {
	names := make([]string, 0, len(w))
	counts, persistent := make(map[string]int, len(w)), make(map[string]int, len(w))
	total, transient := 0, 0
	for s, classes := range w {
		names = append(names, s)
		for class, n := range classes {
			counts[s] += n
			if classify.IsExhaustedTransient(class) {
				transient += n
			} else {
				persistent[s] += n
			}
		}
		total += counts[s]
	}
	// Largest first, then by name, so that ties resolve the same every run.
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	spiking := []string{}
	for _, s := range names {
		if counts[s] >= th.SpikeCount {
			spiking = append(spiking, s)
		}
	}
	sort.Strings(spiking)
	verdict := func(code, reason string, args ...any) Verdict {
		return Verdict{Code: code, Label: Labels[code], Reason: fmt.Sprintf(reason, args...), Spiking: spiking}
	}
	if total == 0 {
		return verdict(Quiet, "no dead letters in the window")
	}
	if len(spiking) > 0 && !anyReaches(persistent, th.SpikeCount) {
		return verdict(Provider, "%d of %d dead letters are exhausted transient failures (%s); without them no source has ≥ %d",
			transient, total, strings.Join(classify.ExhaustedTransientClasses(), ", "), th.SpikeCount)
	}
	top := names[0]
	if share := float64(counts[top]) / float64(total); counts[top] >= th.SpikeCount && share >= th.OneSourceShare {
		v := verdict(oneSourceCode(w[top], counts[top], th), "%s holds %d of %d dead letters (%.0f%% ≥ %.0f%%)", top, counts[top], total, share*100, th.OneSourceShare*100)
		v.Source = top
		return v
	}
	if share := float64(len(spiking)) / float64(len(names)); len(spiking) >= 2 && share >= th.EverySourceShare {
		return verdict(EverySource, "%d of %d active sources have ≥ %d dead letters (%.0f%% ≥ %.0f%%)",
			len(spiking), len(names), th.SpikeCount, share*100, th.EverySourceShare*100)
	}
	if len(spiking) == 0 {
		return verdict(Trickle, "%s over %s, none with ≥ %d",
			plural(total, "dead letter", "dead letters"), plural(withLetters(counts), "source", "sources"), th.SpikeCount)
	}
	return verdict(Mixed, "%d of %d active sources have ≥ %d dead letters, none holds ≥ %.0f%% of them",
		len(spiking), len(names), th.SpikeCount, th.OneSourceShare*100)
}

// oneSourceCode is the shape of a spike in one source whose dead letters
// by class are classes, n in all: its scans' when most are below its
// OCR bar.
func oneSourceCode(classes map[string]int, n int, th Thresholds) string {
	if float64(classes[classify.ClassOCRLowConfidence]) >= th.OneSourceShare*float64(n) {
		return ScansOneSource
	}
	return OneSource
}

// withLetters counts the sources with dead letters.
func withLetters(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		if c > 0 {
			n++
		}
	}
	return n
}

// anyReaches reports whether some count reaches n.
func anyReaches(counts map[string]int, n int) bool {
	for _, c := range counts {
		if c >= n {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
