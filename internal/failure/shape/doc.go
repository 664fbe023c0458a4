// Package shape reads the shape of a window of dead letters from how they
// spread across sources and what their error classes are: a trickle
// everywhere (data quality), a spike of transient failures only (the
// provider failed), a spike in one source (that source changed) or a spike
// in every source (our deployment changed). It is pure: callers count,
// Label decides. `sluice dlq report` and the triage console share it, so
// both always say the same thing.
package shape
