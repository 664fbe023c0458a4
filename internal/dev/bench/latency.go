package bench

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
)

// ScenarioLatency is the 384-dimension pipeline against an embed-sim
// that answers every request in latencyBound: three runs, each against
// its ideal rate. latency-100ms keeps every consumer default, whose ideal
// (3,840 chunks/s) is beyond what two cores sustain, so it is reported
// only. latency-100ms-bound is the documented setting for a slow
// embedder (README, "Scaling out"): one consumer process whose batches
// are one request of latencyBatch, with its default pull loops, so that
// the embedder and not the CPU is the limit; latency-100ms-raised doubles
// the knob, CONSUMER_WORKERS. Both must reach 0.8 of their ideal.
const ScenarioLatency = "latency-100ms"

// latencyBound is embed-sim's latency in the latency-bound runs: a
// provider's usual answer time for a batch.
const latencyBound = 100 * time.Millisecond

// latencyMinSeconds is how long a latency-bound run lasts at least, at its
// ideal rate: long enough that the ramp-up at the start and the last
// batches at the end do not set the rate.
const latencyMinSeconds = 5

// quickLatencyChunks caps the corpus of a latency-bound run in quick mode.
const quickLatencyChunks = 2_000

// latencyBatch is BATCH_SIZE and EMBED_MAX_INPUTS of the latency-bound
// setting: one request per batch.
const latencyBatch = 16

// latencyRun is one run of the latency-bound scenario.
type latencyRun struct {
	// name is the run's name in the report.
	name string
	// label says in the ratio's name what the run's settings are.
	label string
	// processes is how many consumer processes run.
	processes int
	// workers is each consumer process's CONSUMER_WORKERS.
	workers int
	// batch is BATCH_SIZE and EMBED_MAX_INPUTS; 0 for the defaults.
	batch int
	// target is the least ratio to ideal the run should reach; 0 when the
	// ratio is only reported.
	target float64
}

// latencyRuns are the runs of the latency-bound scenario.
func latencyRuns() []latencyRun {
	return []latencyRun{
		{name: ScenarioLatency, label: "all defaults", processes: consumers, workers: consumer.DefaultWorkers},
		{name: ScenarioLatency + "-bound", label: "latency-bound setting", processes: 1, workers: consumer.DefaultWorkers,
			batch: latencyBatch, target: 0.8},
		{name: ScenarioLatency + "-raised", label: "latency-bound, workers doubled", processes: 1,
			workers: 2 * consumer.DefaultWorkers, batch: latencyBatch, target: 0.8},
	}
}

// batchSizes are the run's BATCH_SIZE and EMBED_MAX_INPUTS.
func (l latencyRun) batchSizes() (batch, maxInputs int) {
	if l.batch == 0 {
		return consumer.DefaultBatchSize, pipeline.DefaultEmbedMaxInputs
	}
	return l.batch, l.batch
}

// ideal is the run's rate if the embedder's latency were its only limit.
func (l latencyRun) ideal() float64 {
	batch, maxInputs := l.batchSizes()
	return idealRate(l.processes, l.workers, batch, maxInputs, latencyBound)
}

// idealRate is the chunks per second of processes × workers pull loops
// when each keeps one batch of batchSize chunks in flight and the
// embedder is the only limit. A batch goes out in requests of at most
// maxInputs chunks, one after another, each taking latency: requests in
// flight × chunks per request / latency.
func idealRate(processes, workers, batchSize, maxInputs int, latency time.Duration) float64 {
	requests := (batchSize + maxInputs - 1) / maxInputs
	return float64(processes*workers*batchSize) / (float64(requests) * latency.Seconds())
}

// latencyChunks is the corpus size of a latency-bound run whose ideal
// rate is ideal: enough for latencyMinSeconds at that rate, never below
// cfg.Chunks, and in quick mode at most quickLatencyChunks (or
// cfg.Chunks, when that is more).
func latencyChunks(cfg Config, ideal float64) int {
	n := max(cfg.Chunks, int(math.Ceil(ideal*latencyMinSeconds)))
	if cfg.Quick {
		n = min(n, max(cfg.Chunks, quickLatencyChunks))
	}
	return n
}

// ratioName names the run's ratio to its ideal.
func (l latencyRun) ratioName() string { return "latency-bound / ideal (" + l.label + ")" }

// verdict returns the ratio's target and its test; none for a ratio only
// reported.
func (l latencyRun) verdict() (string, func(float64) bool) {
	if l.target == 0 {
		return "", nil
	}
	return "≥ " + strconv.FormatFloat(l.target, 'f', -1, 64), func(v float64) bool { return v >= l.target }
}

// spec is the run's pipeline under cfg.
func (l latencyRun) spec(cfg Config) pipelineSpec {
	batch, maxInputs := l.batchSizes()
	spec := pipelineSpec{dims: 384, chunks: latencyChunks(cfg, l.ideal()), consumers: l.processes,
		faults: simFaults{latency: "fixed:" + latencyBound.String()}}
	// Only what differs from the consumers' defaults is set.
	if l.workers != consumer.DefaultWorkers {
		spec.consumerEnv = append(spec.consumerEnv, "CONSUMER_WORKERS="+strconv.Itoa(l.workers))
	}
	if l.batch != 0 {
		spec.consumerEnv = append(spec.consumerEnv, "BATCH_SIZE="+strconv.Itoa(batch), "EMBED_MAX_INPUTS="+strconv.Itoa(maxInputs))
	}
	return spec
}

// describe says what the run's pipeline is.
func (l latencyRun) describe() string {
	batch, maxInputs := l.batchSizes()
	return fmt.Sprintf("384 dims, embed-sim %s a request, %d consumer process(es) × CONSUMER_WORKERS %d × BATCH_SIZE %d "+
		"(EMBED_MAX_INPUTS %d): ideal %s chunks/s", latencyBound, l.processes, l.workers, batch, maxInputs, num(l.ideal()))
}

// latencyScenarios are the scenarios of the latency-bound runs.
func (r *runner) latencyScenarios() []scenario {
	var out []scenario
	for _, l := range latencyRuns() {
		out = append(out, r.pipeline(l.name, l.describe(), l.spec(r.cfg)))
	}
	return out
}
