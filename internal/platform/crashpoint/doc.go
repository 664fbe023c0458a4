// Package crashpoint makes a process die at a named place, for crash tests.
// It is enabled only by the test-only environment variable
// SLUICE_CRASH_POINT; production never sets it, and with it unset the hook
// FromEnv returns does nothing.
//
// FromEnv returns the hook each service calls at its crash points:
// "after-commit-before-ack", "after-park-before-term" and "mid-embed" in
// the consumer, and there too bulk mode's steps, each named "bulk-" and
// one of package bulk's Crash constants ("bulk-uploaded",
// "bulk-slice-applied", ...); "after-publish-before-mark" in the outbox
// relay;
// "after-plan-before-record", "after-record-before-publish" and
// "after-delete-batch" (after each delete transaction of a sync) in the
// producer. "mid-embed" exits
// shortly after the embedding request was sent, while it is in flight.
package crashpoint
