// Package batchapi is the client of an OpenAI-compatible Batch API for
// embeddings: building request files within the provider's limits,
// uploading them (the Files API), creating, watching, listing and
// cancelling batches, and reading their output and error files.
//
// What it guarantees:
//
//   - A file built by Builder never holds more requests, inputs, bytes or
//     tokens than its Limits, and every custom_id in it is unique; a
//     request that cannot fit any file is refused with an error naming
//     the limit, before anything is written.
//   - Output and error files are read line by line (Reader), in whatever
//     order the provider wrote them, holding one line in memory at a time:
//     a 200 MB file costs the memory of its longest line.
//   - Every line comes back as a Result keyed by its custom_id, and a
//     failed line's error classifies through pkg/classify exactly as the
//     same input's error would on the live /v1/embeddings endpoint: a 400
//     is a *classify.StatusError with the provider's code (inside an
//     *embedder.InputError when the provider names the input), a
//     vector of the wrong dimension or holding NaN is the same permanent
//     classify error the live client gives. Lines that never ran (the
//     batch expired or was cancelled) are retryable and match
//     ErrRequestExpired or ErrRequestCancelled.
//   - Calls answered with a non-2xx status return an *APIError wrapping
//     the *classify.StatusError; a batch or file the provider no longer
//     knows matches ErrNotFound.
//
// The client makes one HTTP request per call and retries nothing: the
// poller built on it decides, through pkg/classify, what to do again.
package batchapi
