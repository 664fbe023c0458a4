package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// consumers is how many consumer processes a pipeline run starts.
const consumers = 2

// workersPerConsumer is the consumer service's default CONSUMER_WORKERS;
// the ceilings use consumers × workersPerConsumer concurrent callers so
// that they are measured at the pipeline's own concurrency.
const workersPerConsumer = consumer.DefaultWorkers

// runner holds what every run of one invocation shares.
type runner struct {
	cfg  Config
	in   *infra
	bins *binaries
	work string
	log  io.Writer

	// docs describes the pipeline-docs run's corpus, once generated, and
	// docsPath is where it is.
	docs     *DocsStats
	docsPath string
	// reuse describes the reuse corpus, once generated, and reuseFiles
	// are its files.
	reuse      *ReuseCorpusStats
	reuseFiles *reuseCorpus

	mu      sync.Mutex
	corpora map[string]string
	procs   []*proc
}

// corpus returns the path of the corpus of n records, generating it on
// first use. Every run of a size reads the same file.
func (r *runner) corpus(n, poisonPercent int) (string, error) {
	key := fmt.Sprintf("corpus-%d-p%d.jsonl", n, poisonPercent)
	r.mu.Lock()
	defer r.mu.Unlock()
	if path, ok := r.corpora[key]; ok {
		return path, nil
	}
	path := filepath.Join(r.work, key)
	if _, err := writeCorpusFile(path, CorpusOptions{Records: n, Seed: r.cfg.Seed, PoisonPercent: poisonPercent}); err != nil {
		return "", err
	}
	r.corpora[key] = path
	return path, nil
}

// start starts a child and remembers it, so that a failed run can kill
// whatever it left running.
func (r *runner) start(s procSpec) (*proc, error) {
	p, err := startProc(s)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	return p, nil
}

// killAll kills every child still running. Each run calls it on the way
// out: on success nothing is left; on failure this is the cleanup.
func (r *runner) killAll() {
	r.mu.Lock()
	procs := r.procs
	r.procs = nil
	r.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

// serviceEnv is the environment every service of a run gets.
func serviceEnv(db *database, natsURL, simURL string, dims int) []string {
	return []string{
		"DATABASE_URL=" + db.url, "NATS_URL=" + natsURL, "EMBEDDER_URL=" + simURL,
		"EMBEDDING_DIMS=" + strconv.Itoa(dims), "METRICS_ADDR=", "LOG_FORMAT=json", "LOG_LEVEL=info",
	}
}

// pipelineSpec is one end-to-end run: producer → stored, two consumers.
type pipelineSpec struct {
	dims          int
	chunks        int
	poisonPercent int
	faults        simFaults
	naive         bool
	profile       string // file prefix for service profiles; empty for none
	consumers     int    // consumer processes; 0 for the usual consumers
	consumerEnv   []string
	syncAlways    bool // on the server with sync_interval: always
	storage       bool // record the tables' sizes once the run settles
	// vacuum pays the run's vacuum debt once it settles: scale runs of
	// different lengths owe different shares of it (see vacuumRun).
	vacuum bool
	// corpus is the run's corpus file; empty for the generated corpus of
	// one chunk a record.
	corpus string
	// source is the producer's --source; empty for benchSource. Runs
	// that feed one database several corpora tell them apart by it.
	source string
	// relay runs the outbox-relay beside the consumers; fleets only
	// (startFleet).
	relay bool
}

// consumerReady is the log line a consumer writes once it pulls.
const consumerReady = "consumer started"

// processes returns the producer and consumer specs of a run.
func (r *runner) processes(s pipelineSpec, env []string, corpus string) (procSpec, []procSpec) {
	if s.naive {
		prod := procSpec{role: "naive-producer", path: r.bins.self,
			env: append(env, RoleEnv+"="+roleNaiveProducer, corpusEnv+"="+corpus)}
		var cons []procSpec
		for i := range consumers {
			cons = append(cons, procSpec{role: fmt.Sprintf("naive-consumer-%d", i+1), path: r.bins.self,
				env: append(env, RoleEnv+"="+roleNaiveConsumer), marker: naiveReady})
		}
		return prod, cons
	}
	prod := procSpec{role: "producer", path: r.bins.path(binProducer),
		args: []string{"--source", cmp.Or(s.source, benchSource), "--jsonl", "--json", corpus}, env: env}
	if s.profile != "" {
		prod.path = r.bins.self
		prod.env = append(env[:len(env):len(env)], RoleEnv+"="+roleProfiledProducer, profileEnv+"="+s.profile+"-producer")
	}
	var cons []procSpec
	for i := range cmp.Or(s.consumers, consumers) {
		c := procSpec{role: fmt.Sprintf("consumer-%d", i+1), path: r.bins.path(binConsumer), env: append(env[:len(env):len(env)], s.consumerEnv...), marker: consumerReady}
		if s.profile != "" {
			c.path = r.bins.self
			c.env = append(c.env, RoleEnv+"="+roleProfiledConsumer, profileEnv+"="+fmt.Sprintf("%s-consumer%d", s.profile, i+1))
		}
		cons = append(cons, c)
	}
	return prod, cons
}

// benchSource is the source id of every benchmark corpus.
const benchSource = "bench"

// runPipeline runs one repetition of a pipeline scenario and measures it
// from the producer's start to the last chunk stored or parked.
func (r *runner) runPipeline(ctx context.Context, s pipelineSpec) (RepResult, error) {
	defer r.killAll()
	corpus := s.corpus
	var err error
	if corpus == "" {
		if corpus, err = r.corpus(s.chunks, s.poisonPercent); err != nil {
			return RepResult{}, err
		}
	}
	db, broker, err := r.in.fresh(ctx, s.dims, s.syncAlways)
	if err != nil {
		return RepResult{}, err
	}
	defer db.drop()
	sim, simURL, err := startSim(r.start, r.bins, r.work, s.dims, r.cfg.Seed, s.faults)
	if err != nil {
		return RepResult{}, err
	}
	prodSpec, consSpecs := r.processes(s, serviceEnv(db, broker.URL, simURL, s.dims), corpus)
	cons, err := r.startAll(consSpecs)
	if err != nil {
		return RepResult{}, err
	}
	if s.profile != "" {
		if err := r.in.resetStatements(ctx); err != nil {
			return RepResult{}, err
		}
	}
	pg0, nats0 := infraCPU("postgres"), infraCPU("nats-server")
	start := time.Now()
	prod, err := r.start(prodSpec)
	if err != nil {
		return RepResult{}, err
	}
	if err := waitSettled(ctx, db, s.chunks, settleTimeout(s.chunks), prod, append([]*proc{sim}, cons...)); err != nil {
		return RepResult{}, err
	}
	requests, answered429, err := simCounts(ctx, simURL)
	if err != nil {
		return RepResult{}, err
	}
	if err := stopAll(cons, sim); err != nil {
		return RepResult{}, err
	}
	res, err := measure(ctx, db, start, s.chunks)
	if err != nil {
		return res, err
	}
	res.EmbedRequests, res.Embed429 = requests, answered429
	if s.vacuum {
		if res.VacuumSeconds, err = vacuumRun(ctx, db); err != nil {
			return res, err
		}
		res.ChunksPerSecVacuumed = float64(s.chunks) / (res.Seconds + res.VacuumSeconds)
	}
	if err := r.record(ctx, s, db, &res); err != nil {
		return res, err
	}
	processUsage(&res, append(append([]*proc{prod}, cons...), sim), pg0, nats0, s.chunks)
	return res, nil
}

// processUsage fills res with the resource use of procs, which have
// exited, PostgreSQL's and NATS's CPU since they read pg0 and nats0, and
// the CPU per 1,000 of chunks that follows.
func processUsage(res *RepResult, procs []*proc, pg0, nats0 time.Duration, chunks int) {
	for _, p := range procs {
		res.Processes = append(res.Processes, p.usage())
	}
	res.PostgresCPUSeconds = (infraCPU("postgres") - pg0).Seconds()
	res.NATSCPUSeconds = (infraCPU("nats-server") - nats0).Seconds()
	cpuPer1k(res, chunks, "embed-sim")
}

// record reads what a settled run left in its database before the
// database is dropped: the statements of a profiled run, the tables'
// sizes where s asks for them.
func (r *runner) record(ctx context.Context, s pipelineSpec, db *database, res *RepResult) error {
	if s.profile != "" {
		if err := r.in.writeStatements(ctx, db, s.profile+".pgstat.txt"); err != nil {
			return err
		}
	}
	if s.storage {
		var err error
		if res.Storage, err = tableSizes(ctx, db); err != nil {
			return err
		}
	}
	return nil
}

// stopAll stops the services (consumers, relay) and embed-sim with SIGTERM, the way an
// operator would, so that their CPU time covers the whole run and a
// service that cannot shut down cleanly fails the run.
func stopAll(cons []*proc, sim *proc) error {
	var errs []error
	for _, c := range cons {
		errs = append(errs, c.stop(time.Minute))
	}
	errs = append(errs, sim.stop(10*time.Second))
	return errors.Join(errs...)
}

// startAll starts the consumers and waits until every one pulls: the clock
// of a run starts with the producer, against consumers already waiting.
func (r *runner) startAll(specs []procSpec) ([]*proc, error) {
	var out []*proc
	for _, spec := range specs {
		p, err := r.start(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for _, p := range out {
		if err := p.ready(time.Minute); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// settleTimeout bounds a run generously: a run that has not settled by
// then is stuck, not slow.
func settleTimeout(chunks int) time.Duration {
	return 2*time.Minute + time.Duration(chunks)*20*time.Millisecond
}

// waitSettled waits for the producer to finish recording, then polls
// until no chunk is pending and checks that every chunk was recorded. The
// poll is an EXISTS on the partial index of pending rows, which stops at
// the first one: a count(*) over the manifest every 50 ms would cost
// PostgreSQL a noticeable share of a core and slow the very run it
// measures. A watched process that fails ends the wait early.
func waitSettled(ctx context.Context, db *database, chunks int, timeout time.Duration, prod *proc, watch []*proc) error {
	deadline := time.Now().Add(timeout)
	poll := func(cond func() (bool, error), what string) error {
		return pollUntil(ctx, deadline, watch, what, cond)
	}
	err := poll(func() (bool, error) { return prod.exited(), nil }, "producer still running")
	if err != nil {
		return err
	}
	if err := prod.exitErr(); err != nil {
		return err
	}
	err = poll(func() (bool, error) {
		var pending bool
		err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ingest_manifest WHERE status = $1)`, manifest.Pending).Scan(&pending)
		return !pending, err
	}, "chunks still pending")
	if err != nil {
		return err
	}
	total, err := db.count(ctx, `SELECT count(*) FROM ingest_manifest`)
	if err == nil && total != chunks {
		err = fmt.Errorf("%d chunks recorded, %d expected", total, chunks)
	}
	return err
}

// pollUntil calls cond every 50 ms until it holds or fails, a watched
// process fails, or deadline passes, when it says what it waited for.
func pollUntil(ctx context.Context, deadline time.Time, watch []*proc, what string, cond func() (bool, error)) error {
	start := time.Now()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		for _, p := range watch {
			if p.exited() && p.exitErr() != nil {
				return fmt.Errorf("%s failed during the run: %w", p.role, p.exitErr())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s after %s", what, time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// measure reads a settled run's outcome from the database: its duration up
// to the last chunk stored or parked, the counts, and the latency of each
// stored chunk from when JetStream took its message to its store: from
// the manifest's published_at, which the store sets to the delivered
// message's stream timestamp (manifest.MarkStored), to the vector's
// updated_at, the store transaction's start. The message is delivered
// before that transaction begins, so a negative latency means the
// definition is broken (or NATS and PostgreSQL disagree on the time),
// and measure returns an error rather than a figure.
func measure(ctx context.Context, db *database, start time.Time, chunks int) (RepResult, error) {
	var res RepResult
	var end time.Time
	err := db.pool.QueryRow(ctx, `
		SELECT max(updated_at), count(*) FILTER (WHERE status = $1), count(*) FILTER (WHERE status = $2)
		FROM ingest_manifest WHERE status IN ($1, $2)`, manifest.Stored, manifest.Parked).Scan(&end, &res.Stored, &res.Parked)
	if err != nil {
		return res, fmt.Errorf("measure: %w", err)
	}
	res.Seconds = end.Sub(start).Seconds()
	if res.Seconds <= 0 {
		return res, fmt.Errorf("measure: last chunk settled %v before the producer started", -end.Sub(start))
	}
	res.ChunksPerSec = float64(chunks) / res.Seconds
	res.P50Ms, res.P99Ms, err = latencyOf(ctx, db, "")
	return res, err
}

// latencyOf is the latency percentiles, in milliseconds, of the stored
// chunks of source's documents, or of every stored chunk for source "",
// as measure defines them.
func latencyOf(ctx context.Context, db *database, source string) (p50, p99 float64, err error) {
	var negative int
	var earliest float64
	err = db.pool.QueryRow(ctx, `
		SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), 0),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), 0),
		       count(*) FILTER (WHERE ms < 0), coalesce(min(ms), 0)
		FROM (SELECT extract(epoch FROM ce.updated_at - m.published_at) * 1000 AS ms
		      FROM chunk_embeddings ce JOIN ingest_manifest m USING (doc_id, chunk_index)
		      JOIN documents d ON d.doc_id = m.doc_id
		      WHERE m.status = $1 AND ($2 = '' OR d.source_id = $2)) t`, manifest.Stored, source).Scan(&p50, &p99, &negative, &earliest)
	if err != nil {
		return 0, 0, fmt.Errorf("measure latency: %w", err)
	}
	if negative > 0 {
		return 0, 0, fmt.Errorf("measure latency: %d chunks stored before JetStream took their message (down to %.3f ms): "+
			"published_at is not the delivered message's stream timestamp", negative, earliest)
	}
	return p50, p99, nil
}

// The servers' keys in RepResult.CPUPer1kByProcess, beside the roles of
// the processes a run starts.
const (
	cpuPostgres = "postgres"
	cpuNATS     = "nats"
)

// cpuPer1k fills the CPU-per-1,000-chunks figures: each process's, the
// services' own, and everything's (the roles in extra, PostgreSQL and NATS
// added).
func cpuPer1k(res *RepResult, chunks int, extra ...string) {
	per1k := func(seconds float64) float64 { return seconds / float64(chunks) * 1000 }
	var services, all float64
	res.CPUPer1kByProcess = map[string]float64{cpuPostgres: per1k(res.PostgresCPUSeconds), cpuNATS: per1k(res.NATSCPUSeconds)}
	for _, p := range res.Processes {
		all += p.CPUSeconds
		res.CPUPer1kByProcess[p.Role] = per1k(p.CPUSeconds)
		if !slices.Contains(extra, p.Role) {
			services += p.CPUSeconds
		}
	}
	all += res.PostgresCPUSeconds + res.NATSCPUSeconds
	res.ServiceCPUPer1k = per1k(services)
	res.TotalCPUPer1k = per1k(all)
}

// mkdir creates dir and its parents.
func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }
