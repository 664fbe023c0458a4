// Package catalog lists every service binary's settings — flags and
// environment variables with their defaults — from the code that parses
// them, so that documentation and deployment files can be checked against
// the binaries instead of drifting from them. The configuration page,
// docs/configuration.md, is rendered from it (Page); regenerate it with
// go generate ./internal/dev/catalog/.
package catalog

//go:generate go run ./cmd/gendoc -out ../../../docs/configuration.md
