package bulk

import (
	"fmt"

	"github.com/sluicehq/sluice/internal/batchapi"
	"github.com/sluicehq/sluice/pkg/classify"
)

// route decides what a result line does to its member: a vector is
// applied; an error that is the input's fault (quarantine, escalate)
// parks it; any other error, which another attempt may not meet, makes it
// owed work again. It returns the member's new state, the error to hand
// on (nil for a vector), and its classification.
func route(res batchapi.Result) (MemberState, error, classify.Decision) {
	if res.Err == nil {
		if len(res.Vectors) != 1 {
			err := classify.Retryable(classify.ClassServerError,
				fmt.Errorf("%w: %d vectors for one input", ErrNotAnswered, len(res.Vectors)))
			return MemberRequeued, err, classify.Classify(err)
		}
		return MemberApplied, nil, classify.Decision{}
	}
	d := classify.Classify(res.Err)
	switch d.Disposition {
	case classify.Quarantine, classify.Escalate:
		return MemberParked, res.Err, d
	}
	return MemberRequeued, res.Err, d
}
