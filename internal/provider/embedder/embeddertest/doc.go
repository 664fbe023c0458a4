// Package embeddertest is the conformance suite every embedder.Embedder
// implementation must pass. Call Run from a test with a constructor for the
// implementation under test.
package embeddertest
