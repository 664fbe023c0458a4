package manifest

// Status is a chunk's status in ingest_manifest, one of the values its
// CHECK constraint allows.
type Status string

// Chunk statuses.
const (
	// Pending is owed work: published, or about to be, and not yet stored
	// or parked.
	Pending Status = "pending"
	// Stored means the chunk's vector of this version is in
	// chunk_embeddings; its job has been cleared.
	Stored Status = "stored"
	// Parked means the chunk failed for good (for now): its dead letter is
	// in the outbox or in dead_letters.
	Parked Status = "parked"
	// Superseded means a newer version of the document replaced the chunk
	// before it was stored: it is owed nothing.
	Superseded Status = "superseded"
)

// Statuses are every chunk status, in the order of the state machine.
var Statuses = []Status{Pending, Stored, Parked, Superseded}

// SQL literals of the chunk statuses, for statements that must name a
// status in their text rather than take it as a parameter: PostgreSQL
// uses a partial index such as ingest_manifest_pending only for a
// predicate that names its status literally.
const (
	SQLPending    = "'" + string(Pending) + "'"
	SQLStored     = "'" + string(Stored) + "'"
	SQLParked     = "'" + string(Parked) + "'"
	SQLSuperseded = "'" + string(Superseded) + "'"
)

// moves are the legal status changes of one version of a chunk, and the
// statement that makes each. A new version of a chunk (RecordPending,
// ParkUnreadable, ParkEscalated) starts over whatever the old version's
// status was: recording replaces the row rather than moving it.
var moves = map[Status]map[Status]string{
	Pending: {
		Stored:     "MarkStored: the vector is committed",
		Parked:     "Park: the chunk failed for good",
		Superseded: "SupersedePending, SupersedeBeyond: a newer version replaced it",
	},
	Parked: {
		Stored:     "MarkStored: a replay or a late redelivery stored it",
		Parked:     "Park: a replay of a later generation failed again",
		Pending:    "Reopen: a parked chunk without a dead letter is re-driven",
		Superseded: "SupersedeBeyond: a newer, shorter version has no such chunk",
	},
	Stored: {
		Pending:    "Reopen: a stored chunk without its vector is re-driven",
		Superseded: "SupersedeBeyond: a newer, shorter version has no such chunk",
	},
	Superseded: {},
}

// CanMove reports whether one version of a chunk may go from one status to
// the other. A superseded chunk is final; a stored one never parks; only
// a parked chunk moves to its own status, when a later replay generation
// parks it again.
func CanMove(from, to Status) bool {
	_, ok := moves[from][to]
	return ok
}
