//go:build tools

// Package versitygw pins the Versity S3 gateway whose posix backend the
// object-storage source's tests run as a real S3-compatible store. It is a
// module of its own so that the gateway's dependencies stay out of
// Sluice's go.mod.
package versitygw

import _ "github.com/versity/versitygw/cmd/versitygw"
