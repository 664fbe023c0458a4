package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/dev/drill"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/migrations"
)

// Config configure a demo run.
type Config struct {
	// BinDir holds the service binaries (make build puts them in bin/).
	BinDir string
	// Documents is how many generated documents to ingest, besides the
	// poison ones. Defaults to 300.
	Documents int
	// Keep leaves everything running after the report until interrupted.
	Keep bool
	// Timeout bounds the wait for convergence. Defaults to 5 minutes.
	Timeout time.Duration
	// Outage is the embedder outage, from the moment the ingest starts.
	// Defaults to 8s.
	Outage time.Duration
	// Cluster runs NATS as a 3-node JetStream cluster with R3 streams,
	// every service given all three URLs. Defaults to one server.
	Cluster bool
	// Stdout receives the report; Stderr progress and messages.
	Stdout, Stderr io.Writer
	// Progress draws a live line on Stderr (a terminal).
	Progress bool
	// Drill runs `sluice-dev drill` (the classification drill) against the
	// system once it has converged, prints its report, and fails the demo
	// if the drill fails.
	Drill bool
	// OnConverged, if set, is called once the system has converged, with
	// each service's metrics address keyed by process name, while
	// everything still runs.
	OnConverged func(metrics map[string]string)
	// OnKept, if set with Keep, is called once the report is printed and
	// the system is left running, while it runs.
	OnKept func(Kept)
}

// Kept is the system a demo with Keep leaves running.
type Kept struct {
	// OwnerURL connects to the database as the schema's owner.
	OwnerURL string
}

func (o *Config) applyDefaults() {
	if o.Documents == 0 {
		o.Documents = 300
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Outage == 0 {
		o.Outage = 8 * time.Second
	}
}

const dims = 384

// services are the binaries the demo runs, from Options.BinDir.
var services = []string{"producer", "consumer", "outbox-relay", "dlq-replayer", "embed-sim"}

// Run runs the demo and prints its report. It returns an error when the
// system did not converge, reconcile found a leak or a duplicate, or a
// document file or a scan did not end as Poison expects.
func Run(ctx context.Context, o Config) error {
	o.applyDefaults()
	for _, b := range services {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return fmt.Errorf("binary %s not found in %s: run `make build` first (or pass --bin)", b, o.BinDir)
		}
	}
	env, err := localenv.New()
	if err != nil {
		return err
	}
	defer env.Close()
	in, err := startInfra(ctx, env, o)
	if err != nil {
		return err
	}
	s := &stack{o: o, dir: env.Root(), dbURL: in.ownerURL, nats: in.nats}
	defer s.stop()
	if err := s.startServices(); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, in.ownerURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := s.ingestAndSync(ctx, pool); err != nil {
		return err
	}
	mig, err := s.migrate(ctx, pool, filepath.Join(s.dir, "corpus"))
	if err != nil {
		return fmt.Errorf("model change: %w", err)
	}
	writeMigration(o.Stdout, mig)
	if !mig.Reconcile.OK {
		return errors.New("reconcile after the model change found leaked, duplicated or stale chunks, or a generation nothing carries")
	}
	if o.Drill {
		s.say("running the fault drill against the running system …")
		if err := s.drill(ctx, pool); err != nil {
			return err
		}
	}
	if o.Keep {
		return s.keep(ctx, pool)
	}
	return nil
}

// ingestAndSync ingests the corpus until it converges, deletes some of it
// with a sync run, reconciles, reads what became of the document files
// and the scans and writes the report of it all.
func (s *stack) ingestAndSync(ctx context.Context, pool *pgxpool.Pool) error {
	st, took, err := s.ingest(ctx, pool)
	if err != nil {
		return err
	}
	if s.o.OnConverged != nil {
		s.o.OnConverged(s.metricsByName())
	}
	sy, err := s.syncDeletes(ctx, pool, filepath.Join(s.dir, "corpus"))
	if err != nil {
		return err
	}
	rep, err := s.reconcile(ctx, pool)
	if err != nil {
		return err
	}
	fi, err := s.readFiles(ctx, pool)
	if err != nil {
		return err
	}
	sc, err := s.readScans(ctx, pool)
	if err != nil {
		return err
	}
	writeReport(s.o.Stdout, st, sy, rep, sc, fi, took, s)
	if !rep.OK {
		return errors.New("reconcile found leaked, duplicated or stale chunks")
	}
	if sy.Deleted != SyncDeletes || sy.Left != (erase.Left{}) || sy.Leaks != 0 {
		return fmt.Errorf("the sync run deleted %d documents, want %d, and left %+v of them (%d erasure leaks)", sy.Deleted, SyncDeletes, sy.Left, sy.Leaks)
	}
	if err := fi.check(); err != nil {
		return fmt.Errorf("the document files did not end as expected: %w", err)
	}
	if err := sc.check(); err != nil {
		return fmt.Errorf("the scans did not end as expected: %w", err)
	}
	return nil
}

// infra is the demo's PostgreSQL database and NATS.
type infra struct {
	// ownerURL connects as the schema's owner; each service connects as
	// its own role (stack.dbURLFor).
	ownerURL string
	nats     natsServer
}

// startInfra starts PostgreSQL and NATS, migrates a database and declares
// the topology.
func startInfra(ctx context.Context, env *localenv.Env, o Config) (*infra, error) {
	if o.Cluster {
		fmt.Fprintln(o.Stderr, "starting PostgreSQL and a 3-node NATS JetStream cluster (R3 streams) …")
	} else {
		fmt.Fprintln(o.Stderr, "starting PostgreSQL and NATS JetStream …")
	}
	pg, err := env.LocalPostgres(ctx)
	if err != nil {
		return nil, err
	}
	nats, replicas, err := startNATS(ctx, env, o.Cluster)
	if err != nil {
		return nil, err
	}
	dbURL, err := createDatabase(ctx, pg.URL, "sluice")
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(ctx, dbURL, migrations.Options{Dims: dims}); err != nil {
		return nil, err
	}
	// Migrations ran as the owner; each service runs as its own role,
	// granted only what its statements need.
	if err := localenv.AllowRoleLogins(ctx, pg.URL); err != nil {
		return nil, err
	}
	// The topology owner declares the streams; every service connects as
	// its own role and only verifies them.
	if err := declareTopology(ctx, nats, replicas); err != nil {
		return nil, err
	}
	return &infra{ownerURL: dbURL, nats: nats}, nil
}

// corpusSource is the source of the demo's corpus.
const corpusSource = "demo"

// ingest runs the producer over a generated corpus, and over the scans as
// their own source, and waits for the system to converge; took is the
// time from the first producer's start.
func (s *stack) ingest(ctx context.Context, pool *pgxpool.Pool) (st status, took time.Duration, err error) {
	corpusDir, scansDir := filepath.Join(s.dir, "corpus"), filepath.Join(s.dir, ScanSource)
	files, err := WriteCorpus(corpusDir, s.o.Documents, 7)
	if err != nil {
		return st, 0, err
	}
	if err := writeBoundPDF(corpusDir); err != nil {
		return st, 0, err
	}
	files++
	scans, err := writeScans(scansDir)
	if err != nil {
		return st, 0, err
	}
	// Only now, the inputs written (the scans take seconds to render), so
	// that the outage meets the first deliveries.
	if err := s.startSim(); err != nil {
		return st, 0, err
	}
	s.say("ingesting %d documents (%d of them poison, document files or scans) with an embedder outage of %s …", files+scans, len(Poison), s.o.Outage)
	start := time.Now()
	if err := s.produce("producer", corpusSource, corpusDir); err != nil {
		return st, 0, err
	}
	if err := s.produce("producer-scans", ScanSource, scansDir); err != nil {
		return st, 0, err
	}
	st, err = s.converge(ctx, pool)
	return st, time.Since(start), err
}

// produce runs the producer once, as the process name, over dir as
// source.
func (s *stack) produce(name, source, dir string) error {
	env, err := s.env("producer", "")
	if err != nil {
		return err
	}
	p, err := s.startProc("producer", name, env, "--source", source, "--json", dir)
	if err != nil {
		return err
	}
	return waitOneShot(p)
}

// keep prints how to reach the running system, serves the console, and
// waits until ctx ends.
func (s *stack) keep(ctx context.Context, pool *pgxpool.Pool) error {
	fmt.Fprintf(s.o.Stdout, "\nKept running (Ctrl-C to stop and clean up):\n  DATABASE_URL=%s\n  NATS_URL=%s\n", s.operatorURL(), s.nats.URLFor(natsauth.Operator))
	if err := s.writeIngestHint(s.o.Stdout); err != nil {
		return err
	}
	for _, m := range s.metrics {
		fmt.Fprintf(s.o.Stdout, "  metrics: http://%s/metrics\n", m)
	}
	// The console runs as its own role, as `sluice console` does.
	consolePool, err := pgxpool.New(ctx, s.dbURLFor(migrations.ConsoleRole))
	if err != nil {
		return err
	}
	defer consolePool.Close()
	stop, err := serveConsole(ctx, consolePool, s.nats.ConnConfig(natsauth.Console, "sluice-demo-console"), s.o.Stdout)
	if err != nil {
		return err
	}
	defer stop()
	if s.o.OnKept != nil {
		s.o.OnKept(Kept{OwnerURL: s.dbURL})
	}
	<-ctx.Done()
	return nil
}

// IngestPlaceholder stands for the user's folder in the command a kept
// demo prints to ingest it.
const IngestPlaceholder = "YOUR-FOLDER"

// writeIngestHint prints the command that ingests a folder of the user's
// into the kept system as the producer, with the producer's own
// credentials: the operator's are refused the producer's tables.
func (s *stack) writeIngestHint(w io.Writer) error {
	env, err := s.env("producer", "")
	if err != nil {
		return err
	}
	var vars []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "NATS_") {
			vars = append(vars, fmt.Sprintf("%s='%s'", k, v))
		}
	}
	fmt.Fprintf(w, "  ingest a folder of yours, as the producer (its own PostgreSQL role and NATS user):\n    %s %s --source mine %s\n",
		strings.Join(vars, " "), runnable(filepath.Join(s.o.BinDir, "producer")), IngestPlaceholder)
	fmt.Fprintln(w, "  for a stack that keeps its data, and a real embedding provider, see docs/quickstart.md (sluice-dev up)")
	return nil
}

// natsServer is the demo's NATS: one server or a cluster, reached with a
// user per role.
type natsServer interface {
	URLFor(role natsauth.Role) string
	ConnConfig(role natsauth.Role, name string) broker.ConnConfig
	Env(role natsauth.Role) []string
}

// startNATS starts one JetStream server, or with cluster a 3-node cluster,
// and returns it with the stream replica count to use.
func startNATS(ctx context.Context, env *localenv.Env, cluster bool) (natsServer, int, error) {
	if cluster {
		c, err := env.LocalCluster(ctx)
		if err != nil {
			return nil, 0, err
		}
		return c, localenv.ClusterSize, nil
	}
	n, err := env.LocalNATS(ctx)
	if err != nil {
		return nil, 0, err
	}
	return n, 1, nil
}

// declareTopology declares the streams and durables, at their replica
// count, as the topology owner, as `sluice nats setup` does.
func declareTopology(ctx context.Context, n natsServer, replicas int) error {
	nc, js, err := broker.Connect(n.ConnConfig(natsauth.Owner, "sluice-demo-setup"), zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	return broker.Ensure(ctx, js, broker.Topology{Replicas: replicas})
}

func createDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return strings.Replace(adminURL, "/postgres?", "/"+name+"?", 1), nil
}

// stack is the demo's running services.
type stack struct {
	o   Config
	dir string
	// dbURL connects as the schema's owner; services get dbURLFor their
	// role.
	dbURL   string
	nats    natsServer
	simURL  string
	procs   []*localenv.Process
	metrics []string
	names   []string
}

func (s *stack) metricsByName() map[string]string {
	m := make(map[string]string, len(s.metrics))
	for i, addr := range s.metrics {
		m[s.names[i]] = addr
	}
	return m
}

func (s *stack) say(format string, args ...any) { fmt.Fprintf(s.o.Stderr, format+"\n", args...) }

// dbURLFor connects to the demo's database as role.
func (s *stack) dbURLFor(role string) string { return localenv.AsRole(s.dbURL, role) }

// operatorURL is the DATABASE_URL of the sluice CLI, as the operator.
func (s *stack) operatorURL() string { return s.dbURLFor(migrations.OperatorRole) }

// env is the environment binary gets, with its own role's NATS
// credentials and PostgreSQL role; metricsAddr may be empty.
func (s *stack) env(binary, metricsAddr string) ([]string, error) {
	natsRole, err := natsauth.ForBinary(binary)
	if err != nil {
		return nil, err
	}
	pgRole, err := migrations.RoleForBinary(binary)
	if err != nil {
		return nil, err
	}
	return append(s.nats.Env(natsRole),
		"DATABASE_URL="+s.dbURLFor(pgRole), "EMBEDDER_URL="+s.simURL,
		fmt.Sprintf("EMBEDDING_DIMS=%d", dims), "METRICS_ADDR="+metricsAddr, "LOG_FORMAT=json", "LOG_LEVEL=info",
		// A demo-sized pipeline: small batches so the outage bites, and a
		// delivery cap of two: the breaker stops the consumers pulling
		// during the outage, so only the batches in flight when it began
		// and the breaker's probes spend deliveries, and the probes exhaust
		// theirs. A short park delay lets the replayer drain them within
		// the demo.
		"BATCH_SIZE=16", "EMBED_MAX_INPUTS=16", "MAX_DELIVERIES=2", "AMBIGUOUS_RETRIES=1", "PARK_RETRY_DELAY=4s",
		"BREAKER_DELAY=2s", "BREAKER_FAILURES=5", "HOUSEKEEPING_INTERVAL=1s",
		// The producer's chunking, shared with the CLI as a deployment's
		// .env shares it: sluice index create refuses another.
		fmt.Sprintf("CHUNK_SIZE=%d", chunk.DefaultSize), fmt.Sprintf("CHUNK_OVERLAP=%d", chunk.DefaultOverlap),
		"CHUNK_UNIT="+string(chunk.DefaultUnit),
	), nil
}

// startSim starts embed-sim with the demo's fault profile: a sprinkle of
// 429s with Retry-After, log-normal latency, an outage from the start, and
// a model that
// rejects the oversize document. The simulator starts just before the
// producer, so the outage meets the first deliveries.
func (s *stack) startSim() error {
	simAddr := strings.TrimPrefix(s.simURL, "http://")
	faults := filepath.Join(s.dir, "faults.json")
	profile := map[string]any{
		"rate_429": 0.03, "retry_after_seconds": 1, "latency": "lognormal:20ms,250ms",
		"outage": map[string]string{"start": "0s", "duration": s.o.Outage.String()},
		"poison": []map[string]string{{"match": OversizeMarker, "kind": "context_length"}},
	}
	b, _ := json.Marshal(profile)
	if err := os.WriteFile(faults, b, 0o644); err != nil {
		return err
	}
	sim, err := s.startProc("embed-sim", "embed-sim", nil, "--addr", simAddr, "--dims", fmt.Sprint(dims), "--faults", faults, "--seed", "7")
	if err != nil {
		return err
	}
	s.procs = append(s.procs, sim)
	return sim.WaitReady(readyTimeout, localenv.HTTPReady(s.simURL+"/healthz"))
}

// startServices starts two consumers, the outbox relay and the DLQ
// consumers, each as its own process with its own metrics address.
func (s *stack) startServices() error {
	// The services learn the simulator's address now; it starts later so
	// that its outage window lines up with the ingest.
	simAddr, err := localenv.FreeAddr()
	if err != nil {
		return err
	}
	s.simURL = "http://" + simAddr
	for _, svc := range []string{"consumer", "consumer", "outbox-relay", "dlq-replayer"} {
		addr, err := localenv.FreeAddr()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s-%d", svc, len(s.procs)+1)
		env, err := s.env(svc, addr)
		if err != nil {
			return err
		}
		p, err := s.startProc(svc, name, env)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, p)
		s.metrics = append(s.metrics, addr)
		s.names = append(s.names, name)
	}
	for i, addr := range s.metrics {
		if err := s.procs[i].WaitReady(readyTimeout, localenv.HTTPReady("http://"+addr+"/readyz")); err != nil {
			return err
		}
	}
	return nil
}

func (s *stack) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		_ = s.procs[i].Stop(stopGrace)
	}
}

// drill runs the fault drill against the stack and prints its report.
func (s *stack) drill(ctx context.Context, pool *pgxpool.Pool) error {
	// The drill ingests its documents as a producer would.
	nc, js, err := broker.Connect(s.nats.ConnConfig(natsauth.Producer, "sluice-drill"), zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	rep, err := drill.Run(ctx, pool, js, drill.Config{EmbedderURL: s.simURL})
	if err != nil {
		return err
	}
	fmt.Fprintln(s.o.Stdout, "\nClassification drill (three 503s then a 200; a permanent 404):")
	rep.Write(s.o.Stdout)
	if !rep.Passed() {
		return errors.New("the fault drill failed")
	}
	return nil
}

func (s *stack) reconcile(ctx context.Context, pool *pgxpool.Pool) (*reconcile.Report, error) {
	nc, js, err := broker.Connect(s.nats.ConnConfig(natsauth.Operator, "sluice-demo"), zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return reconcile.Run(ctx, pool, js, reconcile.Config{})
}
