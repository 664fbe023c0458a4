package generation

// Hit names one chunk a search returned: what two generations' results
// are compared by, whatever their scores and versions.
type Hit struct {
	DocID      string `json:"doc_id"`
	ChunkIndex int    `json:"chunk_index"`
}

// Agreement is how far two generations' top-k results for one query
// agree.
type Agreement struct {
	// HitsA and HitsB are how many hits each generation returned, at
	// most k.
	HitsA int `json:"hits_a"`
	HitsB int `json:"hits_b"`
	// Shared counts the chunks in both lists, |A∩B|.
	Shared int `json:"shared"`
	// Overlap is overlap@k: Shared over the longer list's length, which
	// is k unless the corpus holds fewer chunks; 1 when neither found
	// anything.
	Overlap float64 `json:"overlap"`
	// ReciprocalRank is 1/r where r is the rank in B of A's top hit: 1
	// when B ranks it first, 1/2 second, 0 when it is not in B's top k;
	// 1 when neither found anything.
	ReciprocalRank float64 `json:"reciprocal_rank"`
}

// Agree compares a and b, two generations' hits for one query, nearest
// first.
func Agree(a, b []Hit) Agreement {
	ag := Agreement{HitsA: len(a), HitsB: len(b)}
	if len(a) == 0 && len(b) == 0 {
		ag.Overlap, ag.ReciprocalRank = 1, 1
		return ag
	}
	inA := make(map[Hit]bool, len(a))
	for _, h := range a {
		inA[h] = true
	}
	for i, h := range b {
		if inA[h] {
			ag.Shared++
		}
		if len(a) > 0 && h == a[0] && ag.ReciprocalRank == 0 {
			ag.ReciprocalRank = 1 / float64(i+1)
		}
	}
	ag.Overlap = float64(ag.Shared) / float64(max(len(a), len(b)))
	return ag
}

// Summary is the agreement of two generations over a set of queries.
type Summary struct {
	Queries int `json:"queries"`
	// MeanOverlap is the mean of the queries' overlap@k.
	MeanOverlap float64 `json:"mean_overlap"`
	// MRR is the mean of the queries' reciprocal ranks: how often, and
	// how high, B ranks A's top hit.
	MRR float64 `json:"mrr"`
	// NoOverlap counts the queries whose lists share no chunk although
	// one of them found something.
	NoOverlap int `json:"no_overlap"`
}

// Summarize averages the agreements of several queries.
func Summarize(ags []Agreement) Summary {
	s := Summary{Queries: len(ags)}
	if len(ags) == 0 {
		return s
	}
	for _, ag := range ags {
		s.MeanOverlap += ag.Overlap
		s.MRR += ag.ReciprocalRank
		if ag.Disjoint() {
			s.NoOverlap++
		}
	}
	s.MeanOverlap /= float64(len(ags))
	s.MRR /= float64(len(ags))
	return s
}

// Disjoint reports whether the two lists share no chunk although one of
// them found something.
func (ag Agreement) Disjoint() bool { return ag.Shared == 0 && ag.HitsA+ag.HitsB > 0 }
