package chunk

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// findPeaks keeps two sliding-window maxima; this checks it against the
// definition read literally, over texts with runs of blank lines, blank
// lines holding spaces, and repeated paragraphs (breaks of equal rank).
func TestPeaksAreTheBreaksThatOutrankAllWithinReach(t *testing.T) {
	t.Parallel()
	seps := []string{"\n\n", "\n\n\n", "\n \t\n", "\n", " "}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var b strings.Builder
		for range 1 + rng.IntN(80) {
			b.WriteString(sentence(rng))
			if rng.IntN(4) == 0 {
				// Longer than anchorText, so that the breaks after it tie.
				b.WriteString("\n\nThe same paragraph, long enough that the breaks after it rank alike.\n\n")
			}
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		text := b.String()
		reach := 1 + rng.IntN(600)
		if got, want := findPeaks(text, reach), peaksByDefinition(text, reach); !slices.Equal(got, want) {
			t.Fatalf("seed %d, reach %d: findPeaks = %v, want %v", seed, reach, got, want)
		}
	}
}

// peaksByDefinition is findPeaks in quadratic time: a break is a peak
// when it outranks every break less than reach before it and ranks at
// least as high as every break less than reach after it.
func peaksByDefinition(text string, reach int) []int {
	var breaks []int
	lines := strings.SplitAfter(text, "\n")
	at := 0
	for i, line := range lines {
		at += len(line)
		if i+2 < len(lines) || (i+2 == len(lines) && strings.HasSuffix(lines[i+1], "\n")) {
			if strings.TrimSpace(lines[i+1]) == "" {
				breaks = append(breaks, at-1)
			}
		}
	}
	var peaks []int
	for _, p := range breaks {
		peak := true
		for _, q := range breaks {
			switch {
			case q < p && p-q < reach:
				peak = peak && anchorRank(text, q) < anchorRank(text, p)
			case q > p && q-p < reach:
				peak = peak && anchorRank(text, q) <= anchorRank(text, p)
			}
		}
		if peak {
			peaks = append(peaks, p)
		}
	}
	return peaks
}
