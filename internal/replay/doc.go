// Package replay selects dead letters by a Filter and replays them: the
// one implementation behind `sluice dlq replay` and the triage console's
// replay button, so both select, count, mark, audit and dispatch the same
// way.
//
// Guarantees (DESIGN §7.5): a replay names an explicit scope, is capped by
// Scope.Limit, previews by default (DryRun), and Execute marks the selection
// (replayed_at, replay_id) and writes its replay_audit row in one
// transaction before anything is published, so the same replay run twice
// dispatches nothing the second time. Rows whose dispatch failed are
// unmarked, so a later replay picks them up. Pause and Resume act on the
// INGEST "replay" durable only; live ingestion is untouched.
package replay
