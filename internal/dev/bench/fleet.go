package bench

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// fleet is a run's embed-sim and consumers (and relay), kept up across several
// producer runs and whatever the run does between them (creating an
// index generation, say), so that what they do in a window can be
// measured from their live CPU time.
type fleet struct {
	r      *runner
	db     *database
	spec   pipelineSpec
	env    []string
	sim    *proc
	simURL string
	cons   []*proc
	// relay is the outbox-relay where spec asks for it; nil otherwise.
	relay *proc
}

// startFleet starts embed-sim, the consumers of spec and, where spec
// asks for it, the outbox-relay against db and broker, and waits until
// every one is ready.
func (r *runner) startFleet(spec pipelineSpec, db *database, broker *localenv.NATS) (*fleet, error) {
	f := &fleet{r: r, db: db, spec: spec}
	var err error
	if f.sim, f.simURL, err = startSim(r.start, r.bins, r.work, spec.dims, r.cfg.Seed, spec.faults); err != nil {
		return nil, err
	}
	f.env = serviceEnv(db, broker.URL, f.simURL, spec.dims)
	_, consSpecs := r.processes(spec, f.env, "")
	services := consSpecs
	if spec.relay {
		services = append(services, procSpec{role: binRelay, path: r.bins.path(binRelay), env: f.env, marker: relayReady})
	}
	started, err := r.startAll(services)
	if err != nil {
		return nil, err
	}
	f.cons = started[:len(consSpecs)]
	if spec.relay {
		f.relay = started[len(consSpecs)]
	}
	return f, nil
}

// relayReady is the log line the outbox-relay writes once it runs.
const relayReady = "outbox relay started"

// services are the fleet's consumers and its relay, if any.
func (f *fleet) services() []*proc {
	if f.relay == nil {
		return f.cons
	}
	return append(f.cons[:len(f.cons):len(f.cons)], f.relay)
}

// watched are the fleet's processes, whose failure ends a wait.
func (f *fleet) watched() []*proc { return append([]*proc{f.sim}, f.services()...) }

// produce runs the producer over corpus as source and waits until the
// manifest holds rows chunks, none pending. It returns when the producer
// started and the producer, exited.
func (f *fleet) produce(ctx context.Context, corpus, source string, rows int) (time.Time, *proc, error) {
	s := f.spec
	s.source = source
	prodSpec, _ := f.r.processes(s, f.env, corpus)
	start := time.Now()
	prod, err := f.r.start(prodSpec)
	if err != nil {
		return start, nil, err
	}
	return start, prod, waitSettled(ctx, f.db, rows, settleTimeout(rows), prod, f.watched())
}

// inputs is how many inputs embed-sim has been sent so far.
func (f *fleet) inputs(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := embedsim.FetchCounts(ctx, f.simURL)
	return c.Inputs, err
}

// cpu is the CPU time each of the fleet's processes has used so far, by
// role.
func (f *fleet) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range f.watched() {
		out[p.role] = p.cpu()
	}
	return out
}

// stop stops the consumers, the relay and embed-sim as an operator
// would.
func (f *fleet) stop() error { return stopAll(f.services(), f.sim) }

// window measures a fleet between two moments: its processes' CPU,
// PostgreSQL's and NATS's, and the inputs embed-sim was sent.
type window struct {
	f        *fleet
	start    time.Time
	cpu      map[string]time.Duration
	pg, nats time.Duration
	inputs   int
}

// windowDelta is what a window measured.
type windowDelta struct {
	cpu    map[string]float64
	inputs int
}

// startWindow opens a window on f now.
func startWindow(ctx context.Context, f *fleet) (*window, error) {
	inputs, err := f.inputs(ctx)
	if err != nil {
		return nil, err
	}
	return &window{f: f, start: time.Now(), cpu: f.cpu(), pg: infraCPU("postgres"), nats: infraCPU("nats-server"), inputs: inputs}, nil
}

// end reads the window up to now: its duration and the servers' CPU as
// a RepResult over chunks, and the fleet's CPU and inputs. It leaves the
// window open, so a later end reads a longer one.
func (w *window) end(ctx context.Context, chunks int) (RepResult, windowDelta, error) {
	var res RepResult
	res.Seconds = time.Since(w.start).Seconds()
	res.ChunksPerSec = float64(chunks) / res.Seconds
	d := windowDelta{cpu: map[string]float64{}}
	for role, t := range w.f.cpu() {
		d.cpu[role] = (t - w.cpu[role]).Seconds()
	}
	res.PostgresCPUSeconds = (infraCPU("postgres") - w.pg).Seconds()
	res.NATSCPUSeconds = (infraCPU("nats-server") - w.nats).Seconds()
	inputs, err := w.f.inputs(ctx)
	d.inputs = inputs - w.inputs
	return res, d, err
}

// total is every process's CPU seconds in a window that res and d
// measured.
func (d windowDelta) total(res RepResult) float64 {
	t := res.PostgresCPUSeconds + res.NATSCPUSeconds
	for _, s := range d.cpu {
		t += s
	}
	return t
}

// usage is each of procs' peak RSS with its CPU in the window.
func (w *window) usage(procs []*proc, cpu map[string]float64) []ProcUsage {
	var out []ProcUsage
	for _, p := range procs {
		u := p.usage()
		u.CPUSeconds = cpu[p.role]
		out = append(out, u)
	}
	return out
}
