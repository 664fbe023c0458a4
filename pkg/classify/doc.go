// Package classify is the one failure classifier every Sluice stage uses. It
// turns any error into a Decision: a Disposition (what to do with the chunk),
// a stable error class (what operators filter and alert on), a finer code and
// the delay the remote side asked for.
//
// The four dispositions are those of design §6:
//
//   - Retry: a transient fault (timeout, dropped connection, 429, most 5xx,
//     serialization failure, too many connections). Back off with full jitter,
//     honour Retry-After, and park as transient_exhausted once the budget is
//     spent.
//   - Quarantine: a permanent fault in the data itself (4xx, invalid
//     encoding, empty text, wrong dimension, CHECK violation). Park at once.
//   - Ambiguous: a fault the classifier does not recognise, or one that is the
//     same for every chunk (a missing table). A few bounded retries, then park.
//   - Escalate: a policy rule matched. Park, alert, never replay automatically.
//
// # Guarantees
//
// Classification keys off HTTP status codes and API error codes, Go error
// types and sentinels (context errors, net.Error, syscall errnos, pgconn
// errors and their SQLSTATE) and this package's own typed errors, found
// anywhere in a wrapped chain. It never inspects message text, so a provider
// rewording an error cannot change a disposition.
//
// Classify is total and deterministic: the same error always yields the same
// Decision, and every non-nil error yields one of the four dispositions.
// Anything not recognised is Ambiguous, never Quarantine, so an unforeseen
// fault costs a few attempts rather than a silently parked corpus, and never
// Retry, so it cannot loop for ever.
//
// An explicit classification wins: the outermost *Error in a chain decides,
// whatever it wraps. Stages that know better than the generic rules (the
// embedder recognising a per-input rejection, the validator, the policy
// engine) say so with Permanent, Retryable, RetryAfter or EscalateRule.
//
// The Class* strings and the Code formats ("http_503", "sqlstate_40001") are
// a contract: they are stored in dead_letters and used as metric labels.
package classify
