package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// simModel is the model the benchmark's clients ask embed-sim for, and
// the model recorded with every vector the benchmark writes.
const simModel = "embed-sim-1"

// simFaults is what embed-sim does wrong in a run.
type simFaults struct {
	// rate429 is the share of requests answered 429 with Retry-After.
	rate429 float64
	// retryAfter is the Retry-After of those 429s, in seconds.
	retryAfter int
	// poison rejects, with 400 invalid_input, every request holding
	// PoisonMarker.
	poison bool
	// latency is embed-sim's --latency, such as "fixed:100ms"; empty for
	// none.
	latency string
	// quotaRPM and quotaTPM are embed-sim's organisation quota; 0 for
	// none.
	quotaRPM, quotaTPM int
	// batch is how long its Batch API's batches take; zero for
	// embed-sim's defaults.
	batch batchPhases
}

// batchPhases are how long each of embed-sim's batches stays
// validating, in progress and finalizing (its --batch-* flags).
type batchPhases struct{ validating, inProgress, finalizing time.Duration }

// args are the phases as embed-sim's flags; none for zero phases.
func (b batchPhases) args() []string {
	if b == (batchPhases{}) {
		return nil
	}
	return []string{"--batch-validating", b.validating.String(), "--batch-in-progress", b.inProgress.String(),
		"--batch-finalizing", b.finalizing.String()}
}

// startSim starts embed-sim as a process on a free port and returns it with
// its base URL. Faults go through its flags and a faults file, the way an
// operator scripts a drill.
func startSim(start func(procSpec) (*proc, error), bins *binaries, workDir string, dims int, seed uint64, f simFaults) (*proc, string, error) {
	args := []string{"--addr", "127.0.0.1:0", "--dims", strconv.Itoa(dims), "--log-level", "warn",
		"--seed", strconv.FormatUint(seed, 10)}
	if f.rate429 > 0 {
		args = append(args, "--rate-429", strconv.FormatFloat(f.rate429, 'f', -1, 64),
			"--retry-after", strconv.Itoa(f.retryAfter))
	}
	if f.latency != "" {
		args = append(args, "--latency", f.latency)
	}
	if f.quotaRPM > 0 || f.quotaTPM > 0 {
		args = append(args, "--quota-rpm", strconv.Itoa(f.quotaRPM), "--quota-tpm", strconv.Itoa(f.quotaTPM))
	}
	args = append(args, f.batch.args()...)
	if f.poison {
		path := filepath.Join(workDir, "poison-faults.json")
		rules := map[string]any{"poison": []map[string]any{{"match": PoisonMarker, "kind": "invalid_input"}}}
		b, _ := json.Marshal(rules)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, "", err
		}
		args = append(args, "--faults", path)
	}
	p, err := start(procSpec{role: "embed-sim", path: bins.path(binEmbedSim), args: args})
	if err != nil {
		return nil, "", err
	}
	// embed-sim prints its URL on stdout once it listens.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if url, ok := firstLine(p.stdoutSnapshot()); ok {
			return p, url, nil
		}
		if p.exited() || time.Now().After(deadline) {
			p.kill()
			return nil, "", fmt.Errorf("embed-sim did not start\n%s", p.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func firstLine(s string) (string, bool) {
	line, _, ok := strings.Cut(s, "\n")
	return strings.TrimSpace(line), ok
}
