// Package embedsim is an OpenAI-compatible embedding server with scripted
// faults. Tests run it in process, and demos, drills and benchmarks run it as
// a process (cmd/embed-sim).
//
// It speaks the real wire format of POST /v1/embeddings (float and base64
// encodings, any dimension, the real error body shape), so the production
// client is what gets exercised. Its vectors are deterministic and carry real
// lexical similarity — texts that share words or character 3-grams are
// closer than unrelated ones — so search and ranking can be checked end to
// end without a model.
//
// Faults are scripted by a Faults value: per-input status sequences, random
// 429/5xx/hang/connection-reset rates drawn from a seeded generator, an
// outage window, poison inputs (400, context length exceeded, wrong
// dimension, NaN) and a latency distribution. Every request is recorded (a
// SHA-256 per input, never the text unless Config.RecordInputs is set) so a
// test or a drill can prove what the server was asked, and how many times.
//
// It also serves the Batch API for /v1/embeddings and the Files API it
// uses (/v1/files, /v1/batches), in the provider's shapes. A batch's
// lines are answered by the live endpoint's own rules, so a line fails as
// the same request would live; its phases run on the injected clock, and
// BatchConfig scripts limits, the enqueued-token quota, output order and
// batch faults (failed, expired, lost, slow to finalize).
package embedsim
