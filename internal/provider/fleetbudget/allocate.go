package fleetbudget

import "sort"

// Claim is one member's part in an allocation: what it did since its
// last heartbeat.
type Claim struct {
	// Used is the fraction of the whole budget the member spent: the
	// larger of its request and token rates over the budget's.
	Used float64 `json:"used"`
	// Hungry reports that the member waited for its share, or has
	// requests waiting for it: it would spend more.
	Hungry bool `json:"hungry"`
}

// Allocation defaults.
const (
	// IdleFloor is the least an idle member is given, as a fraction of an
	// equal share: enough to start work at once and turn hungry.
	IdleFloor = 0.1
	// Headroom multiplies what an idle member spent into its claim, so a
	// member whose load grows slowly need not wait to turn hungry.
	Headroom = 1.5
)

// Allocate divides the budget among claims and returns each one's
// fraction, in order; the fractions add up to one. A hungry member
// claims all it can get, any other what it used times Headroom, at least
// IdleFloor of an equal share and at most an equal share. Claims are
// filled from the smallest up to an equal level of what remains
// (water-filling): hungry members split what the others leave, and when
// none is hungry what is left over is spread evenly.
func Allocate(claims []Claim) []float64 {
	n := len(claims)
	if n == 0 {
		return nil
	}
	equal := 1 / float64(n)
	demand := make([]float64, n)
	order := make([]int, n)
	for i, c := range claims {
		order[i] = i
		demand[i] = 1 // as much as it can get
		if !c.Hungry {
			demand[i] = min(equal, max(c.Used*Headroom, IdleFloor*equal))
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return demand[order[a]] < demand[order[b]] })
	out := make([]float64, n)
	left := 1.0
	for k, i := range order {
		out[i] = min(demand[i], left/float64(n-k))
		left -= out[i]
	}
	for i := range out {
		out[i] += left / float64(n)
	}
	return out
}

// Pace is the share a member paces to from its allocation now and at
// its previous heartbeat, prev (negative before its first): a decrease
// at once, an increase only once it has been allocated for a whole
// heartbeat. Every other member heartbeats within that time, so it has
// seen the claim behind the increase and made room: the shares members
// pace to do not overdraw the budget while allocations move. A member
// that has just joined paces to IdleFloor of an equal share of the n
// members it saw.
func Pace(alloc, prev float64, n int) float64 {
	if prev < 0 {
		return min(alloc, IdleFloor/float64(max(n, 1)))
	}
	return min(alloc, prev)
}

// Fallback is a member's share while the bucket cannot be reached: the
// budget divided by the members it last counted, itself included, or
// its current share if lower. It never raises the share: a member cut
// off alone while the others keep theirs, and take up its share once
// its entry expires, would otherwise spend over the budget (the rule
// Pace follows: no increase the others have not seen).
func Fallback(current float64, lastKnown int) float64 {
	return min(current, 1/float64(max(lastKnown, 1)))
}
