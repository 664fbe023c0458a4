package deploytest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// deployProject is the compose project name of the real run.
const deployProject = "sluice-deploytest"

// TestDeploy runs docker-compose.yml on a Docker engine: the start order,
// the one-shot services, an ingest that converges, three consumers with
// one killed mid-ingest converging again, and a `down -v` that leaves
// nothing behind. make test-deploy runs it with SLUICE_TEST_DEPLOY=1 and
// local images (SLUICE_POSTGRES_IMAGE, SLUICE_NATS_IMAGE, SLUICE_TAG);
// with the gate set, an engine that does not answer is a failure.
func TestDeploy(t *testing.T) {
	if os.Getenv("SLUICE_TEST_DEPLOY") != "1" {
		t.Skip("set SLUICE_TEST_DEPLOY=1 (make test-deploy) to run docker-compose.yml on a Docker engine")
	}
	s := newStack(t, deployProject)
	first := s.upAndIngest()
	checkStarted(t, s)

	s.mustCompose(5*time.Minute, "up", "-d", "--wait", "--no-deps", "--scale", "consumer=3", "consumer")
	consumers := s.running("consumer")
	if len(consumers) != 3 {
		t.Fatalf("%d consumers running after --scale consumer=3, want 3", len(consumers))
	}
	killed := ingestKillingConsumer(t, s, consumers[0].ID, writeCorpus(t, 200, 2))
	second := s.converge(4 * time.Minute)
	if second.Chunks["stored"] <= first.Chunks["stored"] || second.Chunks["superseded"] == 0 {
		t.Fatalf("second ingest (new and changed documents): %+v after %+v, want more stored and some superseded", second, first)
	}
	t.Logf("second ingest, consumer %s killed: %+v", killed, second)

	s.mustCompose(5*time.Minute, "down", "-v", "--remove-orphans")
	checkNothingLeft(t, deployProject)
}

// TestDeployCluster runs the cluster variant (docker-compose.yml with
// deploy/cluster/docker-compose.cluster.yml) the same way: the three NATS
// nodes and the services come up healthy, an ingest converges on R3
// streams, a second converges while one node is killed, and it converges
// again once that node is back.
func TestDeployCluster(t *testing.T) {
	if os.Getenv("SLUICE_TEST_DEPLOY") != "1" {
		t.Skip("set SLUICE_TEST_DEPLOY=1 (make test-deploy) to run the cluster variant on a Docker engine")
	}
	const project = deployProject + "-cluster"
	s := newStack(t, project, "deploy/cluster/docker-compose.cluster.yml")
	first := s.upAndIngest()
	checkStarted(t, s)
	for _, node := range []string{"nats", "nats-2", "nats-3"} {
		if n := len(s.running(node)); n != 1 {
			t.Fatalf("%d %s containers running, want 1", n, node)
		}
	}
	node := s.running("nats-2")[0]
	if out, err := exec.CommandContext(t.Context(), "docker", "kill", node.ID).CombinedOutput(); err != nil {
		t.Fatalf("docker kill %s: %v\n%s", node.Name, err, out)
	}
	s.setenv("SLUICE_CORPUS", writeCorpus(t, 200, 2))
	s.mustCompose(5*time.Minute, "run", "--rm", "--no-deps", "-T", "producer")
	second := s.converge(4 * time.Minute)
	if second.Chunks["stored"] <= first.Chunks["stored"] {
		t.Fatalf("ingest with %s down: %+v after %+v, want more stored", node.Name, second, first)
	}
	s.mustCompose(5*time.Minute, "up", "-d", "--wait", "--no-deps", "nats-2")
	s.setenv("SLUICE_CORPUS", writeCorpus(t, 100, 3))
	s.mustCompose(5*time.Minute, "run", "--rm", "--no-deps", "-T", "producer")
	third := s.converge(4 * time.Minute)
	t.Logf("R3 ingests: %+v; with %s killed: %+v; after it rejoined: %+v", first, node.Name, second, third)
	s.mustCompose(5*time.Minute, "down", "-v", "--remove-orphans")
	checkNothingLeft(t, project)
}

// upAndIngest brings the stack up and runs the producer over a first
// corpus of 150 documents, returning the converged report.
func (s *stack) upAndIngest() reconcileReport {
	s.t.Helper()
	s.setenv("SLUICE_CORPUS", writeCorpus(s.t, 150, 1))
	// A consumer killed mid-ingest holds deliveries until AckWait expires.
	s.setenv("ACK_WAIT", "15s")
	// `up --wait` fails when a container it waits for has exited, and
	// nothing waits for the producer to complete: it would race with the
	// producer's exit. So the long-running services come up with --wait,
	// then the producer runs.
	services := slices.DeleteFunc(strings.Fields(s.mustCompose(time.Minute, "config", "--services")),
		func(name string) bool { return name == "producer" })
	s.mustCompose(10*time.Minute, append([]string{"up", "-d", "--wait"}, services...)...)
	s.mustCompose(5*time.Minute, "up", "-d", "producer")
	s.events.await(s.t, 3*time.Minute, "producer", "exit 0", exited("0"))
	first := s.converge(3 * time.Minute)
	if first.Chunks["stored"] == 0 {
		s.t.Fatalf("first ingest stored nothing: %+v", first)
	}
	s.t.Logf("first ingest: %+v", first)
	return first
}

// checkStarted holds the running stack to what docker-compose.yml
// promises: each service started only once what it depends on was healthy
// or had completed, the one-shot services exited 0, every long-running
// service is healthy, two consumers run, and nothing is published beyond
// loopback.
func checkStarted(t *testing.T, s *stack) {
	t.Helper()
	healthy := isAction("health_status: healthy")
	completed := exited("0")
	order := []struct {
		dep       string
		ready     func(event) bool
		dependent []string
	}{
		{"postgres", healthy, []string{"migrate"}},
		{"migrate", completed, []string{"producer", "consumer", "outbox-relay", "dlq-replayer"}},
		{"nats", healthy, []string{"nats-setup"}},
		{"nats-setup", completed, []string{"producer", "consumer", "outbox-relay", "dlq-replayer"}},
		{"embed-sim", healthy, []string{"consumer", "dlq-replayer"}},
	}
	for _, o := range order {
		ready, ok := s.events.first(o.dep, o.ready)
		if !ok {
			t.Errorf("%s never became ready", o.dep)
			continue
		}
		for _, d := range o.dependent {
			start, ok := s.events.first(d, isAction("start"))
			switch {
			case !ok:
				t.Errorf("%s never started", d)
			case start.TimeNano <= ready.TimeNano:
				t.Errorf("%s started %s before %s was ready", d, time.Duration(ready.TimeNano-start.TimeNano), o.dep)
			}
		}
	}
	consumers := 0
	for _, c := range s.ps() {
		switch {
		case c.Service == "migrate" || c.Service == "nats-setup" || c.Service == "producer":
			if c.State != "exited" || c.ExitCode != 0 {
				t.Errorf("one-shot %s: %s, exit code %d; want exited 0", c.Name, c.State, c.ExitCode)
			}
		case c.State != "running" || c.Health != "healthy":
			t.Errorf("%s: %s, %q; want running and healthy", c.Name, c.State, c.Health)
		}
		if c.Service == "consumer" {
			consumers++
		}
		for _, p := range c.Publishers {
			if p.PublishedPort != 0 && p.URL != "127.0.0.1" {
				t.Errorf("%s publishes port %d on %q: publish on 127.0.0.1 only", c.Name, p.PublishedPort, p.URL)
			}
		}
	}
	if consumers != 2 {
		t.Errorf("%d consumers, want the 2 replicas docker-compose.yml asks for", consumers)
	}
}

// ingestKillingConsumer runs the one-shot producer over corpus and, once
// it has started, kills the consumer container id; the producer must
// still exit 0. It returns the killed container's name.
func ingestKillingConsumer(t *testing.T, s *stack, id, corpus string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s.setenv("SLUICE_CORPUS", corpus)
	var out strings.Builder
	producer := s.command(ctx, "run", "--rm", "--no-deps", "-T", "producer")
	producer.Stdout, producer.Stderr = &out, &out
	since := time.Now().UnixNano()
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	s.events.await(t, time.Minute, "producer", "second producer start", func(e event) bool {
		return e.Action == "start" && e.TimeNano > since
	})
	name, err := exec.CommandContext(ctx, "docker", "inspect", "--format", "{{.Name}}", id).Output()
	if err != nil {
		t.Fatalf("inspect consumer %s: %v", id, err)
	}
	if out, err := exec.CommandContext(ctx, "docker", "kill", id).CombinedOutput(); err != nil {
		t.Fatalf("docker kill %s: %v\n%s", id, err, out)
	}
	s.events.await(t, time.Minute, "consumer", "SIGKILL exit of "+id, func(e event) bool {
		return strings.HasPrefix(e.Actor.ID, id) && e.Action == "die" && e.Actor.Attributes["exitCode"] == "137"
	})
	if err := producer.Wait(); err != nil {
		t.Fatalf("producer over the second corpus: %v\n%s", err, out.String())
	}
	return strings.TrimPrefix(strings.TrimSpace(string(name)), "/")
}

// checkNothingLeft asserts that no container, network or volume of the
// project survives `docker compose down -v`.
func checkNothingLeft(t *testing.T, project string) {
	t.Helper()
	label := "label=com.docker.compose.project=" + project
	for _, kind := range [][]string{
		{"ps", "-a", "-q", "--filter", label},
		{"network", "ls", "-q", "--filter", label},
		{"volume", "ls", "-q", "--filter", label},
	} {
		out, err := exec.CommandContext(t.Context(), "docker", kind...).Output()
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(kind, " "), err)
		}
		if left := strings.Fields(string(out)); len(left) != 0 {
			t.Errorf("after down -v, docker %s still lists %q", kind[0], left)
		}
	}
}
