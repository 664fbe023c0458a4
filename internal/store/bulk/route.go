package bulk

import (
	"fmt"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/pkg/classify"
)

// route decides what a result line does to its member: a vector is
// applied; an error that is the input's fault (quarantine, escalate)
// parks it; any other error, which another attempt may not meet, makes it
// owed work again. It returns the member's new state, the error's
// classification, and the error to hand on (nil for a vector).
func route(res batchapi.Result) (MemberState, classify.Decision, error) {
	if res.Err == nil {
		if len(res.Vectors) != 1 {
			err := classify.Retryable(classify.ClassServerError,
				fmt.Errorf("%w: %d vectors for one input", ErrNotAnswered, len(res.Vectors)))
			return MemberRequeued, classify.Classify(err), err
		}
		return MemberApplied, classify.Decision{}, nil
	}
	d := classify.Classify(res.Err)
	switch d.Disposition {
	case classify.Quarantine, classify.Escalate:
		return MemberParked, d, res.Err
	}
	return MemberRequeued, d, res.Err
}
