package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
)

// ErrUsage marks a command-line mistake.
var ErrUsage = errors.New("usage")

// UsageError wraps a flag-parsing error so that ExitCode maps it to 2.
func UsageError(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// ExitCode maps a service's Run error to its exit status: 0 for a clean
// stop (including SIGTERM and --help), 2 for a usage mistake, 1 otherwise.
func ExitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}
