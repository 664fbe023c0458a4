// Package manifest owns the status of every chunk (ingest_manifest) and
// every document (documents): their typed statuses, the legal moves
// between them, and every SQL statement that changes one. It also holds
// the retention of what a parked chunk keeps: its job bytes
// (ClearParkedJobs) and, for a chunk ParkEscalated parked, its secret's
// text in escalated_chunks (PurgeEscalatedText).
//
// Callers keep their transactions: each statement runs on the Querier it
// is given — a pgx.Tx, a *pgxpool.Pool or a *pgx.Conn — as one statement,
// so moving a statement here costs no round trip. Statements guard their
// moves in their WHERE clauses; CanMove is the same state machine in Go,
// and the package's tests hold the two to agreement.
//
// Read-only queries elsewhere name a status through a Status constant,
// passed as a parameter, or through the SQL literals (SQLPending, …) where
// the statement's text must name it, as a partial index's predicate
// requires.
package manifest
