package demo

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

const (
	// readyTimeout bounds a service's wait to answer its readiness check.
	readyTimeout = 60 * time.Second
	// stopGrace is how long a service has to stop after SIGTERM before it
	// is killed.
	stopGrace = 15 * time.Second
	// logTail is how much of a failed process's log an error quotes.
	logTail = 2000
)

// startProc starts the binary bin from Options.BinDir as the process
// name, its output in name.log under the demo's root. It dies with the
// demo.
func (s *stack) startProc(bin, name string, env []string, args ...string) (*localenv.Process, error) {
	return localenv.Start(localenv.Command{
		Name: name,
		Path: filepath.Join(s.o.BinDir, bin),
		Args: args,
		Env:  env,
		Log:  filepath.Join(s.dir, name+".log"),
	})
}

// waitOneShot waits for a one-shot process and reports a failure with its
// log.
func waitOneShot(p *localenv.Process) error {
	if err := p.Wait(); err != nil {
		return fmt.Errorf("%s: %w\n%s", p.Name(), err, p.LogTail(logTail))
	}
	return nil
}
