// Package wait is the one context-aware pause of the code base, for the
// waits that are not retries: a loop's pause between polls, a simulated
// latency. Retries and backoff go through failsafe-go policies instead.
package wait
