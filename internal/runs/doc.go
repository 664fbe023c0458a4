// Package runs owns ingest_runs: the stored and parked counts of each
// run, its terminal status once the producer has finished publishing and
// none of its chunks is pending any more, and its halting — the judgement
// that a run's rejection ratio crossed its threshold, and the operator's
// resume or cancel that follows. Every statement on ingest_runs outside
// the producer's own record of its run lives here.
package runs
