package localenv

import (
	"fmt"
	"net/http"
	"time"
)

// Poll intervals: a condition that holds soon is seen soon, and one that
// takes long is not asked too often on a busy machine.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

// Poll calls cond until it returns true or timeout passes, and reports
// whether cond held. It waits 5 ms between the first calls, doubling up to
// 100 ms.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := firstPoll
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		wait = min(2*wait, maxPoll)
	}
	return true
}

// HTTPReady returns a readiness check for WaitReady that succeeds when url
// answers 200 OK.
func HTTPReady(url string) func() error {
	return func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}
