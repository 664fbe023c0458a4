package service

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is every service's garbage-collection target (what
// GOGC sets) unless GOGC is set. A service keeps a few MiB live and
// allocates per message, so Go's default of 100 collects several times a
// second under load. At 200 the services used about a fifth less CPU in
// make bench for a few MiB more peak RSS each; 400 saved little more and
// let a short run's peak RSS grow by half before it settled.
const DefaultGCPercent = 200

// tuneGC applies DefaultGCPercent when the environment does not set GOGC,
// which the Go runtime has then already applied.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
