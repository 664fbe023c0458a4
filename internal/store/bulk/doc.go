// Package bulk is bulk mode's ledger: chunk jobs embedded through the
// provider's Batch API (internal/provider/batchapi) rather than the live endpoint,
// at half the price and outside the live rate limits, held in PostgreSQL
// (bulk_batches, bulk_members; migration 29) for the hours a batch takes.
// It owns both tables.
//
// Three parts move a batch along its lifecycle (State):
//
//   - Ledger.Admit records chunk jobs as members of request lines inside
//     the caller's transaction, one line per distinct text of a
//     generation: a text already waiting in an unfinished batch joins
//     its line; the others go to their source's open batch, which is
//     sealed before a new line would take it past the provider's limits
//     (requests, inputs, bytes, tokens) or once it is Config.MaxAge old
//     (Ledger.SealDue).
//   - Builder writes a sealed batch's request file (one request per
//     line, LineID as custom_id), uploads it and creates the provider
//     batch, with the ledger's id in the batch's metadata.
//   - Poller follows each batch through the provider's statuses, applies
//     the output and error files through an Applier (each line's result
//     to every member waiting on it), hands every member without a
//     usable result to a Requeuer as owed work, and records how the
//     batch ended (view.Outcome).
//
// Canceller cancels a source's batches, at the provider and before.
//
// What it guarantees:
//
//   - Nothing is lost: once Admit's transaction commits, a member ends
//     applied (its vector handed to the Applier), parked (an error the
//     classifier says is the input's fault, handed to the Applier), or
//     requeued (handed to the Requeuer) — whether the batch completes,
//     fails, expires, is cancelled, or is lost by the provider, and
//     whatever line of its files fails or cannot be read. Each hand-over
//     commits in one transaction with the member's new state.
//   - Crashes cost nothing but time: every step is recorded as it ends,
//     so a process killed while building, uploading, creating, polling or
//     applying leaves a batch a fresh process resumes. A file uploaded but
//     not recorded is uploaded again; a batch created but not recorded is
//     found by its input file and metadata, never created twice; a file
//     half applied resumes after its last applied slice; and a line
//     applied again changes nothing, because only pending members take a
//     result.
//   - A chunk version is pending in at most one batch of its generation,
//     so a redelivered job is admitted once.
//   - One process at a time moves a batch (a session advisory lock, which
//     dies with its process).
//   - No file stays at the provider: a settled batch's files are
//     deleted; a refused create deletes its file; an upload is recorded
//     before it starts, so the poller deletes the file of one a crash
//     left unrecorded; a file holding the text of a document erased
//     since is deleted while its batch runs. Orphans finds any other.
//
// Requests sent per chunk is the ratio of
// sluice_bulk_provider_requests_total to
// sluice_bulk_members_total{outcome="admitted"}.
package bulk
