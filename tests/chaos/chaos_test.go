package chaos_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/policy"
)

var (
	chaosDuration = flag.Duration("chaos.duration", 20*time.Second, "how long TestChaos injects faults (make chaos: 90s)")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "seed of TestChaos's fault schedule (0: from the clock)")
)

// bulkSource is the source TestChaos's policy puts in bulk mode: the
// producers' third.
const bulkSource = "src2"

// faultLog counts the faults injected, by kind.
type faultLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *faultLog) add(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[kind]++
}

func (l *faultLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var kinds []string
	total := 0
	for k, n := range l.n {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d faults (%s)", total, strings.Join(kinds, ", "))
}

// TestChaos runs live load (producers still running over text, PDFs,
// DOCX files and scans, a slow and flaky embed-sim) while faults land at random for -chaos.duration: kill -9 of
// every service, the producer included; kill -9 of nats-server; immediate
// PostgreSQL stops, one a 15 s outage (5 s in the short run); embedder
// outages and hangs on top of random 429s; an operator deletes a random
// document every second or so; and a quarter into the run the operator
// creates an index generation of another model and size, which the
// consumers backfill through the rest (through provider batches on odd
// seeds). One source of three is in bulk
// mode: its chunks wait in provider batches that fail, expire, are lost
// or die with embed-sim, and are handed back. Then, with no operator action,
// everything must converge: nothing pending, INGEST empty, 0 lost, 0
// duplicated, every vector the embedder's for its text in every
// generation, the new generation holding every stored chunk (or parking
// it), no deleted document with data anywhere, reconcile exit 0.
// Every service runs twice, as a scaled-out deployment would.
func TestChaos(t *testing.T) {
	t.Parallel()
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d), duration %s", seed, seed, *chaosDuration)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	// The provider's batches run in seconds rather than hours, and some
	// fail, expire half done or are lost; a restarted embed-sim loses
	// every batch it had.
	simFlags := []string{"--latency", "uniform:5ms-60ms", "--rate-429", "0.05", "--seed", fmt.Sprint(seed % 1000),
		"--batch-validating", "200ms", "--batch-in-progress", "1500ms", "--batch-finalizing", "200ms", "--batch-window", "4s",
		"--batch-fail-rate", "0.1", "--batch-expire-rate", "0.1", "--batch-lose-rate", "0.1"}
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, policyFile, "sources:\n  "+bulkSource+":\n    mode: batch\n")
	f := newFleet(t, fleetOptions{sim: simFlags, topology: broker.Topology{AckWait: 10 * time.Second},
		env: []string{"OWED_GRACE=3s", "EMBEDDER_TIMEOUT=2s", "BREAKER_DELAY=1s", "PARK_RETRY_DELAY=2s",
			"MAX_REPLAYS=10", "BATCH_SIZE=16", "EMBED_MAX_INPUTS=16", "ACK_WAIT=10s", "PUBLISH_PATIENCE=5s",
			"POLICY_FILE=" + policyFile, "BULK_MAX_AGE=1s", "BULK_INTERVAL=300ms"}})
	services := map[string]*proc{}
	var smu sync.Mutex
	// Two of every service: relays claim outbox rows side by side, and
	// the replayers share their durable, so neither may duplicate work.
	names := []string{"consumer-a", "consumer-b", "outbox-relay-a", "outbox-relay-b", "dlq-replayer-a", "dlq-replayer-b"}
	bin := map[string]string{}
	for _, n := range names {
		bin[n] = n[:strings.LastIndexByte(n, '-')]
	}
	for _, n := range names {
		services[n] = f.service(bin[n])
	}

	faults := &faultLog{n: map[string]int{}}
	ctx, stop := context.WithTimeout(context.Background(), *chaosDuration)
	defer stop()

	// Live load: producers keep publishing new corpora, each with a PDF
	// and a DOCX and every third with a scan that OCR reads, so that a
	// producer is killed while its extraction workers run too; a run
	// killed or refused by an outage is run again, as its scheduler
	// would.
	var docs atomic.Int64
	var producers sync.WaitGroup
	var runningProducer atomic.Pointer[proc]
	producers.Go(func() {
		prng := rand.New(rand.NewPCG(seed+1, seed))
		for i := 0; ctx.Err() == nil; i++ {
			n := 10 + prng.IntN(15)
			dir := f.writeCorpus(fmt.Sprintf("c%03d", i), n, 20+prng.IntN(40))
			n += f.writeDocuments(dir, i)
			docs.Add(int64(n))
			for attempt := 0; ; attempt++ {
				p := f.produce(fmt.Sprintf("src%d", i%3), dir)
				runningProducer.Store(p)
				code, err := p.wait(5 * time.Minute)
				runningProducer.Store(nil)
				if err == nil && code == 0 {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
	})

	// Delete traffic: an operator deletes a random document now and then,
	// whatever its chunks are doing (in flight, redelivered, held during
	// an outage, parked, replayed, swept as owed work); a delete refused
	// while PostgreSQL is down is simply not counted.
	var deletes atomic.Int64
	producers.Go(func() {
		drng := rand.New(rand.NewPCG(seed+2, seed))
		for ctx.Err() == nil {
			time.Sleep(time.Duration(300+drng.IntN(900)) * time.Millisecond)
			source, docID, ok := f.randomDocument()
			if !ok {
				continue
			}
			if code, _ := f.sluice("docs", "delete", "--source", source, "--id", docID, "--reason", "chaos: removed at the source", "--execute"); code == 0 {
				deletes.Add(1)
			}
		}
	})

	// A model change: a quarter into the run, an operator creates a
	// generation of another model and size, whose backfill then runs
	// through every fault beside live work; refused while PostgreSQL is
	// down, the create is simply tried again.
	var created atomic.Bool
	// Its backfill goes through the live endpoint or, on odd seeds,
	// through provider batches.
	genMode := policy.ModeLive
	if seed%2 == 1 {
		genMode = policy.ModeBatch
	}
	t.Logf("the generation created mid-run is backfilled in %s mode", genMode)
	producers.Go(func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(*chaosDuration / 4):
		}
		for refused := 0; ctx.Err() == nil; refused++ {
			code, out := f.sluice("index", "create", "--model", "embed-sim-large", "--dims", fmt.Sprint(2*dims),
				"--chunk-size", "200", "--chunk-unit", "chars", "--chunk-overlap", "0", "--mode", genMode,
				"--reason", "chaos: a larger model", "--execute")
			if code == 0 {
				created.Store(true)
				return
			}
			if refused == 0 {
				t.Logf("index create refused (%d), trying again every second: %s", code, strings.TrimSpace(out))
			}
			time.Sleep(time.Second)
		}
	})

	longOutage := 15 * time.Second
	if *chaosDuration < time.Minute {
		longOutage = 5 * time.Second
	}
	longDone := false
	// Every kind of fault lands once per round, in a random order, so
	// even the short run covers them all; services are killed twice as
	// often as anything else.
	kinds := []string{"service", "service", "producer", "nats", "postgres", "embedder-outage", "embedder-hangs"}
	for ctx.Err() == nil {
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, kind := range kinds {
			if ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
			switch kind {
			case "service":
				name := names[rng.IntN(len(names))]
				smu.Lock()
				services[name].kill()
				smu.Unlock()
				faults.add("kill -9 " + bin[name])
				time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
				smu.Lock()
				services[name] = f.spawn(bin[name], f.env(bin[name], freeAddr(t)))
				smu.Unlock()
			case "producer":
				if p := runningProducer.Load(); p != nil {
					p.kill()
					faults.add("kill -9 producer")
				}
			case "nats":
				if err := f.nats.Kill(context.Background()); err != nil {
					t.Fatal(err)
				}
				faults.add("kill -9 nats-server")
				time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
				if err := f.nats.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
			case "postgres":
				outage := time.Duration(1000+rng.IntN(2000)) * time.Millisecond
				what := "postgres immediate stop"
				if !longDone {
					outage, what, longDone = longOutage, fmt.Sprintf("postgres outage %s", longOutage), true
				}
				if err := f.pg.StopImmediate(context.Background()); err != nil {
					t.Fatal(err)
				}
				faults.add(what)
				time.Sleep(outage)
				if err := f.pg.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
			case "embedder-outage":
				f.sim.kill()
				faults.add("embedder outage")
				time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
				f.startSim(simFlags...)
			case "embedder-hangs":
				f.sim.kill()
				f.startSim(append(simFlags, "--rate-hang", "0.3", "--hang-for", "4s")...)
				faults.add("embedder hangs")
				time.Sleep(time.Duration(2000+rng.IntN(2000)) * time.Millisecond)
				f.sim.kill()
				f.startSim(simFlags...)
			}
		}
	}
	// The faults stop; whatever is down comes back as a supervisor would
	// bring it back, and the last producer run finishes.
	smu.Lock()
	for _, n := range names {
		if !services[n].running() {
			services[n] = f.spawn(bin[n], f.env(bin[n], freeAddr(t)))
		}
	}
	smu.Unlock()
	producers.Wait()
	end := time.Now()
	v := f.converge(5*time.Minute, int(docs.Load()))
	if deletes.Load() == 0 {
		t.Error("no delete succeeded during the run: the delete traffic did not happen")
	}
	if !created.Load() {
		t.Error("no index generation was created during the run: the backfill did not happen")
	}
	if n := f.count(`SELECT count(*) FROM bulk_members WHERE state = 'applied' AND generation = 1`); n == 0 {
		t.Errorf("no chunk of the bulk source %s was stored through a provider batch", bulkSource)
	}
	if n := f.count(`SELECT count(*) FROM bulk_members WHERE state = 'applied' AND generation > 1`); genMode == policy.ModeBatch && n == 0 {
		t.Error("no chunk of the generation created in batch mode was stored through a provider batch")
	}
	_, status := f.sluice("index", "status", "2")
	t.Logf("the generation backfilled under the faults:\n%s", status)
	t.Logf("chaos: %d documents (%d deletes, %d deleted now), %d chunks (%d stored, %d parked), %s, converged %s after the last fault",
		v.documents, deletes.Load(), v.deleted, v.stored+v.parked, v.stored, v.parked, faults, time.Since(end).Round(100*time.Millisecond))
}
