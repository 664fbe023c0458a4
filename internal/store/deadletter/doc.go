// Package deadletter owns the dead_letters, dead_letter_payloads,
// dead_letter_history, file_bytes and file_bytes_refs tables (the last
// two keep the bytes of parked files, for their replay): every statement that writes them is here,
// and so is every read of the CLI, the console and the replayer (List,
// Page, Get, History, Select, the counts), so the rest of the code base
// calls these functions. Triage records a
// failure (Record), the store, the producer and reconcile resolve one
// (Resolve), the pipeline and the producer write dead letters to the
// outbox with their oversize payloads (Write), operator replays mark and
// unmark them (MarkReplayed, UnmarkReplayed), and retention purges what
// they leave behind.
//
// It also holds what every reader of a dead letter agrees on: its State
// (StateSQL, and Filter, which selects by it), which ones
// the replayer re-embeds on its own (Replayable, ReplayableSQL) and how a
// dead letter's job becomes its next replay generation (ReplayJob,
// NextGeneration). It imports none of the services that read dead
// letters, so the console, the CLI and the replayer all can.
package deadletter
