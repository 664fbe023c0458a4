package classify_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

func ExampleClassify() {
	// What an embedder returns when the API throttles it.
	err := fmt.Errorf("embed batch: %w", &classify.StatusError{
		StatusCode: 429,
		RetryAfter: 20 * time.Second,
	})

	d := classify.Classify(err)
	fmt.Println(d.Disposition, d.Class, d.Code)

	switch d.Disposition {
	case classify.Retry:
		// Full jitter, but never sooner than the server asked.
		b := classify.Backoff{Base: time.Second, Max: time.Minute}
		fmt.Println(b.DelayAtLeast(1, d.RetryAfter) >= 20*time.Second)
	case classify.Quarantine, classify.Escalate:
		fmt.Println("park now")
	case classify.Ambiguous:
		fmt.Println("retry within the ambiguous budget, then park")
	}
	// Output:
	// retry rate_limited http_429
	// true
}
