// Package replay selects dead letters by a Filter and replays them: the
// one implementation behind `sluice dlq replay` and the triage console's
// replay button, so both select, count, mark, audit and dispatch the same
// way.
//
// Guarantees (design §7.5): a replay names an explicit scope, is capped by
// Scope.Limit, previews by default (DryRun), and Execute marks the selection
// (replayed_at, replay_id) and writes its replay_audit row in one
// transaction before anything is published, so the same replay run twice
// dispatches nothing the second time. Rows whose dispatch failed are
// unmarked, so a later replay picks them up. A dead letter already
// replayed once (deadletter.AlreadyReplayedSQL) is left out unless the scope says
// IncludeReplayed; an escalation is never selected at all. Dry runs,
// replays, pauses and resumes are all recorded in replay_audit with who
// asked; ListAudit reads them back with each replay's outcome. Pause and
// Resume act on both replay durables (operator and automatic replays);
// live ingestion is untouched.
//
// A Correction replays one dead letter with a corrected payload (edited
// text or metadata, or, through a Rederivation, the chunk taken again
// from its source). It keeps the chunk's identity, takes a new content
// hash, follows it in the chunk's manifest row, and is dispatched like
// any replay, so the consumer screens it again. Dry runs and executed
// corrections alike are audited (action correct) with the diff; it
// marks before dispatch and unmarks on failure, as Execute does.
package replay
