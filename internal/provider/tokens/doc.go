// Package tokens counts text the way an embedding model does, so that
// chunk sizes, the per-input context limit and the per-request token cap
// are measured in the model's own tokens.
//
// ForModel picks the counter for a model name: the model's BPE vocabulary
// (cl100k_base for text-embedding-ada-002 and text-embedding-3-small and
// -large, and for the simulator's embed-sim-* models that stand in for
// them, o200k_base for the models that use it) when the model is known,
// and Approximate, an estimate from the characters, otherwise. The
// vocabularies are compiled into the binary: counting never reads a file
// or the network.
//
// Every Counter is safe for concurrent use.
package tokens
