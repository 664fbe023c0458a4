package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// riverOutput is what the River peer prints on stdout: one JSON object.
// The bench/cmd/sluice-river-peer program defines the same fields.
type riverOutput struct {
	Chunks    int     `json:"chunks"`
	Seconds   float64 `json:"seconds"`
	Stored    int     `json:"stored"`
	Discarded int     `json:"discarded"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
}

// runRiver runs the River peer over the clean 384-dimension corpus: its
// own database (the schema migrated here, River's by the peer with
// rivermigrate), its own embed-sim, one process doing what the producer
// and the consumers do.
func (r *runner) runRiver(ctx context.Context, peer string) (RepResult, error) {
	defer r.killAll()
	const dims = 384
	corpus, err := r.corpus(r.cfg.Chunks, 0)
	if err != nil {
		return RepResult{}, err
	}
	db, err := r.in.freshDB(ctx, dims)
	if err != nil {
		return RepResult{}, err
	}
	defer db.drop()
	sim, simURL, err := startSim(r.start, r.bins, r.work, dims, r.cfg.Seed, simFaults{})
	if err != nil {
		return RepResult{}, err
	}
	pg0, nats0 := infraCPU("postgres"), infraCPU("nats-server")
	args := append([]string{
		"--database-url", db.url, "--embedder-url", simURL, "--dims", strconv.Itoa(dims),
		"--corpus", corpus, "--chunks", strconv.Itoa(r.cfg.Chunks), "--workers", strconv.Itoa(r.cfg.RiverWorkers),
		"--fetch-cooldown", r.cfg.RiverFetchCooldown.String(),
	}, r.cfg.RiverArgs...)
	p, err := r.start(procSpec{role: "river-peer", path: peer, args: args})
	if err != nil {
		return RepResult{}, err
	}
	if err := p.wait(settleTimeout(r.cfg.Chunks)); err != nil {
		return RepResult{}, err
	}
	if err := sim.stop(10 * time.Second); err != nil {
		return RepResult{}, err
	}
	var out riverOutput
	if err := json.Unmarshal([]byte(p.stdoutSnapshot()), &out); err != nil {
		return RepResult{}, fmt.Errorf("river peer output: %w\n%s", err, p.stdoutSnapshot())
	}
	if out.Chunks != r.cfg.Chunks || out.Stored+out.Discarded != out.Chunks || out.Seconds <= 0 {
		return RepResult{}, fmt.Errorf("river peer settled %d stored + %d discarded of %d chunks in %gs",
			out.Stored, out.Discarded, out.Chunks, out.Seconds)
	}
	res := RepResult{Seconds: out.Seconds, ChunksPerSec: float64(out.Chunks) / out.Seconds,
		Stored: out.Stored, Parked: out.Discarded, P50Ms: out.P50Ms, P99Ms: out.P99Ms,
		Processes:          []ProcUsage{p.usage(), sim.usage()},
		PostgresCPUSeconds: (infraCPU("postgres") - pg0).Seconds(),
		NATSCPUSeconds:     (infraCPU("nats-server") - nats0).Seconds()}
	cpuPer1k(&res, out.Chunks, "embed-sim")
	return res, nil
}
