// Package devcli is sluice-dev, the development command: the demo, which
// builds and starts nats-server, PostgreSQL and every service on this
// machine, `up` and `down`, which keep a stack of the same for a user's
// own documents in a directory (internal/dev/stack), and the
// classification drill against a running system whose
// embedder is embed-sim. It needs a Go toolchain and PostgreSQL's server
// binaries, so it lives outside the operator CLI (internal/ops/cli) and
// outside the product image; internal/dev/archtest holds the product
// binaries to linking no internal/dev package.
package devcli
