// Package policy owns the per-source operating policy: how many
// deliveries, ambiguous retries and replays a source's chunks get, how
// their retries back off, how long their embed stage may run, when a run
// of theirs is halted, and how long their dead letters and escalations
// are kept; plus the embedder-wide breaker and rate budget.
//
// A policy is read from one YAML file (POLICY_FILE) with a default
// section and one section per source. Every value the file leaves out
// falls back to the service's flags and environment, which in turn fall
// back to the documented Default constants, so a service without a policy
// file behaves exactly as before. Decoding is strict: an unknown key, a
// value of the wrong type or a value that breaks a guarantee is an error
// that names the file and line and says how to fix it.
//
// A Table answers For(source) with concrete Settings; lookups are pure
// and safe for concurrent use.
package policy
