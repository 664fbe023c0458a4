// Package s3source reads documents from object storage: S3, or an
// S3-compatible store (Ceph, MinIO, Versity) at a custom endpoint.
//
// A Source is a corpus.Walker over s3://bucket/prefix. It lists the prefix
// a page at a time and hands each page to its Ledger, which says which
// objects changed since their documents were recorded (by ETag, version
// id and size): an unchanged object is not fetched, and the ledger marks
// its document read by the run. A new or changed object is streamed to a
// spool file, never held whole in memory, and read through the same
// extraction path as a file of a directory (corpus.File).
//
// What it guarantees:
//
//   - The ledger learns of a fetched object (Take) only once the run
//     records its document, in the same transaction: a run killed
//     mid-listing or mid-fetch leaves the ledger holding what was
//     recorded, and the next run fetches only the rest.
//   - Every object of a listing is either fetched and yielded or marked
//     read by the ledger, so the producer's --sync deletes exactly the
//     documents of objects gone from the prefix, and only after a
//     complete listing: a listing that fails part-way fails the walk.
//   - An object that vanished between its listing and its fetch
//     (NoSuchKey) is a delete: it is yielded as a tombstone.
//   - Failures are classified by pkg/classify: 5xx, throttling and
//     timeouts are retried with backoff; access denied and a missing
//     bucket fail the walk at once with ErrAccessDenied or ErrNoSuchBucket
//     and a message naming what to fix.
package s3source
