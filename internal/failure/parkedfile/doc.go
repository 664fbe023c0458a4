// Package parkedfile replays a file the producer parked whole (a
// document-level dead letter: encrypted, corrupt, too large, no text)
// after its cause is fixed: from the bytes kept with its dead letter
// (file_bytes), through the extraction the producer uses (corpus and
// extract, with the source's formats and limits, a password, or a
// replacement Extractor), then the producer's own recording, chunking,
// screening and publishing path, as a new version of the document. Or,
// with keyed text, it stores text an operator typed in as the document.
//
// It guarantees: a replay that stores the document resolves the dead
// letter (superseded by the new version, under the replay's id, so the
// replay audit counts it stored) and records the document once, since a
// second replay finds the dead letter resolved or in flight; a replay
// that fails again parks the new version with its new class, keeping its
// bytes; every replay, dry or executed, leaves a replay_audit row.
package parkedfile
