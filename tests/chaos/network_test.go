//go:build chaos

package chaos_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/netfault"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

var blackholeFor = flag.Duration("chaos.blackhole", 10*time.Second, "how long TestNetworkFaults blackholes a connection (make chaos: 20s)")

// netTimeouts are the deployment's client timeouts in the network tests,
// short enough for a blackhole to outlast each of them.
// Small batches and one worker per consumer keep a few hundred chunks in
// flight for seconds, so each fault lands on live work.
var netTimeouts = []string{"EMBEDDER_TIMEOUT=2s", "BREAKER_DELAY=1s", "SQL_TIMEOUT=2s", "NATS_PING_INTERVAL=1s",
	"PUBLISH_PATIENCE=5s", "ACK_WAIT=10s", "BATCH_SIZE=8", "EMBED_MAX_INPUTS=8", "CONSUMER_WORKERS=1",
	"PARK_RETRY_DELAY=2s", "OWED_GRACE=3s"}

// proxies are the Toxiproxy proxies between the services and each server.
type proxies struct {
	nats, postgres, embedder *netfault.Proxy
}

// target returns the proxy in front of the named server.
func (p proxies) target(name string) *netfault.Proxy {
	return map[string]*netfault.Proxy{"nats": p.nats, "postgres": p.postgres, "embedder": p.embedder}[name]
}

// behindProxies routes every service the fleet starts from now on
// through Toxiproxy; the test's own checks keep their direct connections.
func (f *fleet) behindProxies() proxies {
	f.t.Helper()
	srv := netfault.New(f.t)
	proxy := func(name, rawURL string) *netfault.Proxy {
		u, err := url.Parse(rawURL)
		if err != nil {
			f.t.Fatal(err)
		}
		p, err := srv.Proxy(name, u.Host)
		if err != nil {
			f.t.Fatal(err)
		}
		return p
	}
	p := proxies{nats: proxy("nats", f.nats.URL), postgres: proxy("postgres", f.db.URL), embedder: proxy("embedder", f.simURL)}
	f.natsURLFor = func(role natsauth.Role) string { return f.nats.URLAt(role, "nats://"+p.nats.Addr) }
	f.dbURLFor = func(role string) string {
		return strings.Replace(f.db.RoleURL(role), p.postgres.Upstream, p.postgres.Addr, 1)
	}
	f.opts.env = append(f.opts.env, "EMBEDDER_URL=http://"+p.embedder.Addr)
	return p
}

// netFault is one row of TestNetworkFaults.
type netFault struct {
	fault netfault.Fault
	hold  time.Duration
}

// TestNetworkFaults puts Toxiproxy between the services and each of NATS,
// PostgreSQL and the embedder and, while a producer's run is in flight,
// makes one of those paths slow (500 ms ± 250 ms), resets its connections
// mid-stream, blackholes it (data silently dropped, connections left open)
// or throttles it. Each case must converge with every chunk stored once or
// parked, INGEST empty and reconcile exit 0. Under the blackhole the
// consumers must give up on the silent connection through their own
// timeouts (timedOutDuring).
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	faults := []netFault{
		{netfault.Latency(500*time.Millisecond, 250*time.Millisecond), 8 * time.Second},
		{netfault.ResetPeer(300 * time.Millisecond), 5 * time.Second},
		{netfault.Blackhole(), *blackholeFor},
		{netfault.Bandwidth(8), 8 * time.Second},
	}
	for _, target := range []string{"nats", "postgres", "embedder"} {
		for _, nf := range faults {
			t.Run(target+"/"+nf.fault.Name, func(t *testing.T) {
				t.Parallel()
				runNetworkFault(t, target, nf)
			})
		}
	}
}

func runNetworkFault(t *testing.T, target string, nf netFault) {
	const docs = 40
	f := newFleet(t, fleetOptions{sim: []string{"--latency", "fixed:150ms"}, env: netTimeouts})
	px := f.behindProxies()
	f.services()
	producer, dir := f.liveRun("net", docs)
	start := time.Now()
	if err := px.target(target).Inject(nf.fault); err != nil {
		t.Fatal(err)
	}
	time.Sleep(nf.hold)
	healed := time.Now()
	if err := px.target(target).Heal(); err != nil {
		t.Fatal(err)
	}
	if code, err := producer.wait(3 * time.Minute); err != nil || code != 0 {
		// A producer that gave up is run again, as its scheduler would.
		t.Logf("producer exited %d (%v) under %s on %s; running it again", code, err, nf.fault.Name, target)
		f.runProducer("net", dir)
	}
	v := f.converge(3*time.Minute, docs)
	t.Logf("%s on %s for %s: %d chunks (%d stored, %d parked)", nf.fault.Name, target, nf.hold, v.stored+v.parked, v.stored, v.parked)
	if nf.fault.Name == "blackhole" {
		f.timedOutDuring(start, healed)
	}
}

// timedOutDuring checks that every consumer gave up on the silent
// connection through its own timeouts while it was silent: each logged a
// fired client timeout (an SQL deadline, which is logged as it fires; a
// stale NATS connection; an embedding attempt's timeout, logged with its
// retry) between the blackhole's start and its heal. A client without a
// deadline would wait the blackhole out and log none before the heal.
func (f *fleet) timedOutDuring(from, healed time.Time) {
	f.t.Helper()
	f.mu.Lock()
	procs := append([]*proc(nil), f.procs...)
	f.mu.Unlock()
	// Log times have one-second resolution.
	until := healed.Add(time.Second)
	for _, p := range procs {
		if p.name != "consumer" {
			continue
		}
		at, ok := firstTimeout(p.log, from, until)
		if !ok {
			f.t.Errorf("%s logged no timeout during the %s blackhole: a client waited on the silent connection",
				p.name, healed.Sub(from).Round(time.Second))
			continue
		}
		f.t.Logf("%s noticed the blackhole %s after it began, %s before its heal", p.log,
			at.Sub(from).Round(100*time.Millisecond), healed.Sub(at).Round(100*time.Millisecond))
	}
}

// firstTimeout returns the time of the first log line between from and
// to that reports a deadline or timeout.
func firstTimeout(path string, from, to time.Time) (time.Time, bool) {
	file, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !timeoutLine(line) {
			continue
		}
		var entry struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil {
			continue
		}
		// Log times have one-second resolution.
		if !entry.Time.Before(from.Truncate(time.Second)) && entry.Time.Before(to) {
			return entry.Time, true
		}
	}
	return time.Time{}, false
}

// timeoutLine reports whether a log line says a client timeout fired.
func timeoutLine(line string) bool {
	for _, sign := range []string{"deadline", "timeout", "timed out", "stale connection", `"to":"open"`} {
		if strings.Contains(line, sign) {
			return true
		}
	}
	return false
}

// liveRun writes a corpus of docs documents and starts a producer run of
// it as source name, returning once the run's work is in flight.
func (f *fleet) liveRun(name string, docs int) (*proc, string) {
	f.t.Helper()
	dir := f.writeCorpus(name, docs, 60)
	p := f.produce(name, dir)
	f.waitInFlight()
	return p, dir
}

// waitInFlight waits until some chunks are stored while others are still
// pending, the moment a fault must land on to prove anything.
func (f *fleet) waitInFlight() {
	f.t.Helper()
	f.eventually(time.Minute, "work in flight", func() bool {
		n, _ := f.tryCount(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`)
		return n > 0
	})
	if pending, _ := f.tryCount(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`); pending == 0 {
		f.t.Fatal("nothing left in flight when the fault began; the test proves nothing")
	}
}
