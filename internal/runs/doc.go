// Package runs keeps ingest_runs up to date: the stored and parked counts
// of each open run, and its terminal status once the producer has finished
// publishing and none of its chunks is pending any more.
package runs
