package crashpoint

import (
	"fmt"
	"os"
	"time"
)

// EnvVar names the crash point to die at.
const EnvVar = "SLUICE_CRASH_POINT"

// ExitCode is the status a crash point exits with, as SIGKILL would show.
const ExitCode = 137

// midCallDelay is how long after entering "mid-*" points the process dies:
// long enough for the request to be on the wire, shorter than any
// realistic embedding call in a crash test.
const midCallDelay = 30 * time.Millisecond

// FromEnv returns the crash hook for the point named in SLUICE_CRASH_POINT,
// or a no-op when it is unset. lookup reads the environment.
func FromEnv(lookup func(string) (string, bool)) func(point string) {
	want, ok := lookup(EnvVar)
	if !ok || want == "" {
		return func(string) {}
	}
	return func(point string) {
		if point != want {
			return
		}
		fmt.Fprintf(os.Stderr, "crashpoint: dying at %s\n", point)
		if len(point) > 4 && point[:4] == "mid-" {
			go func() {
				time.Sleep(midCallDelay)
				os.Exit(ExitCode)
			}()
			return
		}
		os.Exit(ExitCode)
	}
}
