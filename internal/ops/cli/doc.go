// Package cli implements the operator command `sluice`: stdout carries
// data, stderr carries messages, --json switches data to JSON for
// machines, and the exit status is 0 only on success (design §8).
package cli
