// Package messages defines Sluice's wire envelopes — ChunkJob and
// BackfillJob on the INGEST stream, DeadLetter on the DLQ stream — together
// with the ids, NATS subjects and Nats-Msg-Id values that go with them
// (design §4).
//
// It is a leaf package: it imports only the standard library, so every
// service, tool and test can share it without import cycles.
//
// # Guarantees
//
// Strict decoding. DecodeChunkJob, DecodeBackfillJob and DecodeDeadLetter
// accept exactly what the schema describes and nothing else: oversize
// input is refused before it is parsed; invalid UTF-8 (including \u escapes of lone surrogates) is
// refused rather than silently replaced; unknown, duplicate or
// case-mismatched fields, missing required fields, values out of range,
// trailing data and unknown schema versions are all errors. A message that
// decodes is therefore one the pipeline can act on, and one that does not
// is rejected at once, with a *DecodeError naming the field and the reason,
// so that it can be parked instead of retried. Every such error matches
// ErrInvalid; ErrUnknownSchema, ErrOversize, ErrInvalidUTF8 and
// ErrMissingField single out the cases callers branch on.
//
// Canonical encoding. Encode validates first, so nothing invalid is ever
// published, and writes one byte sequence per value: fields in a fixed
// order, metadata canonicalised (CanonicalJSON), times in UTC, no HTML
// escaping. Decoding and re-encoding an encoded envelope gives the same
// bytes. Decoding is tolerant of order and whitespace, so an envelope that
// passed through Postgres jsonb (the outbox) still decodes.
//
// Stable ids. DocID, DeadLetterID and ContentHash are pure functions of
// their inputs, and the Nats-Msg-Id builders of theirs, so that retries,
// republishing and replays converge on the same rows and are deduplicated
// by the broker. Their formats are contracts: changing one orphans every
// row and message written before.
//
// # Evolving a schema
//
// Any change to an envelope's fields, their meaning or their validation is
// a new schema version. Deploy readers that accept the new version before
// any writer produces it; a reader that sees a newer version fails with
// ErrUnknownSchema rather than guessing.
package messages
