package generation_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store/generation"
)

func hits(keys ...string) []generation.Hit {
	out := make([]generation.Hit, len(keys))
	for i, k := range keys {
		out[i] = generation.Hit{DocID: k[:1], ChunkIndex: int(k[1] - '0')}
	}
	return out
}

// Two result lists agree by the chunks they share and by where the
// second ranks the first's top hit.
func TestAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b []generation.Hit
		want generation.Agreement
	}{
		{"same", hits("a0", "b0", "c1"), hits("a0", "b0", "c1"), generation.Agreement{HitsA: 3, HitsB: 3, Shared: 3, Overlap: 1, ReciprocalRank: 1}},
		{"same set, other order", hits("a0", "b0", "c1"), hits("c1", "b0", "a0"), generation.Agreement{HitsA: 3, HitsB: 3, Shared: 3, Overlap: 1, ReciprocalRank: 1.0 / 3}},
		{"another chunk of the same document", hits("a0", "b0"), hits("a1", "a0"), generation.Agreement{HitsA: 2, HitsB: 2, Shared: 1, Overlap: 0.5, ReciprocalRank: 0.5}},
		{"top hit missing", hits("a0", "b0", "c0", "d0"), hits("b0", "c0", "e0", "f0"), generation.Agreement{HitsA: 4, HitsB: 4, Shared: 2, Overlap: 0.5}},
		{"disjoint", hits("a0", "b0"), hits("c0", "d0"), generation.Agreement{HitsA: 2, HitsB: 2}},
		{"fewer hits in one", hits("a0", "b0", "c0", "d0"), hits("a0"), generation.Agreement{HitsA: 4, HitsB: 1, Shared: 1, Overlap: 0.25, ReciprocalRank: 1}},
		{"none in A", nil, hits("a0"), generation.Agreement{HitsB: 1}},
		{"none in either", nil, nil, generation.Agreement{Overlap: 1, ReciprocalRank: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := generation.Agree(tc.a, tc.b); got != tc.want {
				t.Errorf("Agree = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A summary averages the queries' overlaps and reciprocal ranks and
// counts the disjoint ones, not those where neither found anything.
func TestSummarize(t *testing.T) {
	t.Parallel()
	got := generation.Summarize([]generation.Agreement{
		generation.Agree(hits("a0", "b0"), hits("a0", "b0")),
		generation.Agree(hits("a0", "b0"), hits("b0", "c0")),
		generation.Agree(hits("a0", "b0"), hits("c0", "d0")),
		generation.Agree(nil, nil),
	})
	want := generation.Summary{Queries: 4, MeanOverlap: (1 + 0.5 + 0 + 1) / 4.0, MRR: (1 + 0 + 0 + 1) / 4.0, NoOverlap: 1}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if got := generation.Summarize(nil); got != (generation.Summary{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
}
