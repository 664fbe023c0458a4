// Package quality builds the per-source quality report: for a window of
// time, how many chunks each source published, stored and parked, by
// error class, and what is still open. A trickle of failures below the
// alerter's spike threshold never pages anyone; it lands here instead, on
// a schedule (Reporter), written to a directory or POSTed to a webhook.
//
// A report is computed from PostgreSQL alone (ingest_runs and
// dead_letters), so a missed or repeated delivery loses nothing: each
// report names its window, and the next one starts where it ended.
package quality
