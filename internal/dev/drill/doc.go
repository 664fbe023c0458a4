// Package drill runs the classification drill against a running
// system whose embedder is embed-sim: three documents whose text carries
// embed-sim's drill markers are ingested through the real producer under
// a dedicated source, and their fate is checked from the database,
// embed-sim's request history and its metrics:
//
//   - a chunk answered 503, 503, 503, then 200 is stored exactly once,
//     after three retries spaced by backoff, with no open dead letter;
//   - a chunk answered 404 is quarantined as not_found after one attempt;
//   - a chunk answered 400 context_length_exceeded (too long for the
//     model) is quarantined with that class after one attempt.
//
// The documents are ingested one after another, so that a batch never
// mixes two of them. Each run uses fresh texts, so a drill can be run
// again at any time; its documents stay under the drill's source, out of
// the way of real sources.
package drill
