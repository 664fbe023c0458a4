// Package erase deletes documents with certainty. A delete is a new
// version of its document, a tombstone (manifest.Tombstones), and its
// effect commits in one transaction composed here from the statements of
// each table's owner: the document is no longer served; its vectors and
// text leave chunk_embeddings, chunk_embeddings_previous and every later
// index generation's generation_embeddings, all generations at once
// (vectorstore.EraseDocuments); its manifest jobs' bytes and escalated
// text are erased (manifest.EraseChunks, manifest.EraseEscalatedText);
// its dead letters' payloads are erased and the open ones resolved as
// deleted (deadletter.Erase). Counts, ids and the audit
// (deletion_requests, document_deletions, which this package owns) stay.
//
// Nothing written later brings the text back: the vector store's version
// guard refuses any record of a version up to the tombstone's, the
// manifest rows are superseded at the tombstone's version so the
// pipeline's screen drops older jobs, and dead letters of erased
// versions are neither written (deadletter.Write) nor recorded
// (deadletter.Record). Check proves it from PostgreSQL, and Redrive
// finishes an erasure that a leak shows unfinished.
package erase
