package testenv

import "github.com/sluicehq/sluice/internal/dev/localenv"

// Buffer is a bytes.Buffer that a logger, a child process's output
// copier and a test may use at once; see localenv.Buffer.
type Buffer = localenv.Buffer
