package systemtest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/devcli"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/simtype"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// `sluice-dev drill` passes against a running system whose embed-sim runs the
// drill's script, with the services' default in-process retries.
func TestDrillPasses(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{Faults: embedsim.Faults{}.WithDrill()}, pipeline.Config{})
	s.startAll(embedder.ResilientConfig{})
	code, out, errOut := s.drill()
	if code != 0 || !strings.Contains(out, "DRILL PASSED") || strings.Contains(out, "FAIL ") {
		t.Fatalf("drill: code %d\n%s%s", code, out, errOut)
	}
	// Run again: fresh texts, so the script starts over.
	if code, out, errOut := s.drill(); code != 0 {
		t.Fatalf("second drill: code %d\n%s%s", code, out, errOut)
	}
}

// The drill fails, naming the check, when embed-sim's script is changed so
// that the 404 succeeds.
func TestDrillFailsWhenThe404Succeeds(t *testing.T) {
	t.Parallel()
	faults := embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: simtype.DrillNotFoundMarker, Sequence: "200"}}}.WithDrill()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{Faults: faults}, pipeline.Config{})
	s.startAll(embedder.ResilientConfig{})
	code, out, errOut := s.drill()
	if code != 1 || !strings.Contains(out, "DRILL FAILED") || !strings.Contains(out, "FAIL  quarantined") || !strings.Contains(errOut, "drill failed") {
		t.Fatalf("drill with the 404 scripted to succeed: code %d; want 1 and the quarantine check failed\n%s%s", code, out, errOut)
	}
}

// drill runs `sluice-dev drill` against this system, with the producer's
// NATS credentials: the drill ingests as the producer does.
func (s *system) drill() (int, string, string) {
	env := s.cliEnv(natsauth.Producer)
	var stdout, stderr bytes.Buffer
	code := devcli.Run(context.Background(), devcli.Env{Stdout: &stdout, Stderr: &stderr,
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}, []string{"drill"})
	return code, stdout.String(), stderr.String()
}
