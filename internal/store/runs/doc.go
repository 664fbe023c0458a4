// Package runs owns ingest_runs: a run's record, opened by its producer,
// beaten by the producer's heartbeat while it runs and closed when it
// has finished publishing; the stored and parked counts of each run; its
// terminal status once none of its chunks is pending any more (Settle),
// interrupted when its producer fell silent before it finished; and its
// halting — the judgement that a run's rejection ratio crossed its
// threshold, and the operator's resume or cancel that follows. Every
// write to ingest_runs but the bench's baseline lives here.
package runs
