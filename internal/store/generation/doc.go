// Package generation keeps the registry of index generations
// (index_generations, migration 25) and its audit
// (index_generation_audit): the one owner of both tables' statements.
//
// A generation is one embedding space: a provider model, the vectors'
// dimensions and the chunking they were cut with. Exactly one generation
// is active, the one search serves; the others are building, ready,
// retired (served before, kept for a rollback) or dropped (their vectors
// removed). Generation 1 is what the database held before generations
// existed, in chunk_embeddings; the vectors of later ones are in
// pkg/vectorstore's generation_embeddings, and pkg/vectorstore owns every
// statement on both.
//
// # Guarantees
//
// Create, Activate and Drop run in one transaction each, record an audit
// row with who asked and why (dry runs too), and change nothing unless
// asked to execute. Activate is atomic: it retires the active generation
// and activates another in one commit, and a reader that reads the
// active generation and searches it in one snapshot (Active, then the
// generation's store on the same transaction) sees one or the other for
// every document, never a mix. It refuses a generation that still owes
// or has parked chunks (Progress, computed from the manifest of
// documents that are not deleted) unless forced. Drop refuses the active
// generation and removes the vectors of the one it drops; the retired
// generation stays whole until dropped, so rolling back is one Activate.
// Check tells reconcile whether exactly one generation is active.
package generation
