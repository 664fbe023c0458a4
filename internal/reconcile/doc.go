// Package reconcile proves DESIGN §7 from the database and the broker: no
// silent drop (every manifest row stored with a vector, parked with a dead
// letter, or pending with a message in INGEST to deliver it), no
// duplicate, nothing stranded, and no stored chunk with an open dead
// letter. With Redrive it repairs what it finds, from PostgreSQL alone,
// even when the INGEST stream is gone, and goes on past a failed repair,
// reporting it.
//
// It is meant for a quiet system: work in flight can look owed or
// stranded for as long as it is in flight.
package reconcile
