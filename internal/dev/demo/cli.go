package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// sluice runs the sluice CLI once, as the operator, with the environment a
// deployment gives it, and returns what it printed on stdout. Its stderr
// goes to sluice.log under the demo's root, quoted when it fails.
func (s *stack) sluice(args ...string) ([]byte, error) {
	env, err := s.env("sluice", "")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	p, err := localenv.Start(localenv.Command{
		Name:   "sluice " + strings.Join(args[:min(2, len(args))], " "),
		Path:   filepath.Join(s.o.BinDir, "sluice"),
		Args:   args,
		Env:    env,
		Log:    filepath.Join(s.dir, "sluice.log"),
		Stdout: &out,
	})
	if err != nil {
		return nil, err
	}
	if err := waitOneShot(p); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// sluiceJSON runs the sluice CLI with --json and decodes what it printed
// into v.
func (s *stack) sluiceJSON(v any, args ...string) error {
	out, err := s.sluice(append(args, "--json")...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("sluice %s --json: %w: %q", strings.Join(args, " "), err, out)
	}
	return nil
}
