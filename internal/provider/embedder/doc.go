// Package embedder turns texts into vectors through an embedding API.
//
// Embedder is the contract the pipeline depends on: one vector per input, in
// input order, of the advertised dimension, or an error the classifier
// (pkg/classify) can route. OpenAI speaks the OpenAI-compatible
// /v1/embeddings protocol; Resilient wraps any Embedder with a per-call
// timeout, a small retry budget and a circuit breaker that only transient
// faults can trip.
//
// Errors come in three shapes:
//
//   - *classify.StatusError for any non-2xx reply, carrying the provider's
//     error code and Retry-After;
//   - *InputError for a reply that is fine except for one input's vector
//     (wrong dimension, NaN or infinity), so that the caller can park that
//     input alone and keep the rest of the batch moving;
//   - a *classify.Error (or a wrapped transport error) for everything else.
//
// Nothing in this package logs input text or the API key.
package embedder
