package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// largeModel is the later generation's model: embed-sim answers any.
const largeModel = "embed-sim-large"

// modelPoison is in one document's text: the later model rejects it for
// its context length, the first takes it.
const modelPoison = "LONGFORTHELARGEMODEL"

// served is what one `sluice search --json` served: the generation, its
// model, and the versions of the documents its hits came from.
type served struct {
	Generation int    `json:"generation"`
	Model      string `json:"model"`
	Hits       []struct {
		DocID   string `json:"doc_id"`
		Version int64  `json:"version"`
	} `json:"hits"`
}

func (f *fleet) search(query string) served {
	f.t.Helper()
	code, out := f.sluice("search", query, "--json", "--k", "20")
	if code != 0 {
		f.t.Fatalf("sluice search exited %d:\n%s", code, out)
	}
	var s served
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		f.t.Fatalf("sluice search --json: %v\n%s", err, out)
	}
	return s
}

// generationStatus is generation g's status in `sluice index ls`.
func (f *fleet) generationStatus(g int) string {
	f.t.Helper()
	code, out := f.sluice("index", "ls", "--json")
	if code != 0 {
		return ""
	}
	var gens []struct {
		Generation int    `json:"generation"`
		Status     string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &gens); err != nil {
		f.t.Fatalf("sluice index ls --json: %v\n%s", err, out)
	}
	for _, x := range gens {
		if x.Generation == g {
			return x.Status
		}
	}
	return ""
}

// TestModelChangeUnderLiveIngestion changes the model and the dimension
// (384 → 768) of a running deployment, every service a process as its
// own role: the new generation is backfilled while documents keep
// arriving, one is deleted, a consumer is killed with -9 and PostgreSQL
// stops; search serves the old generation alone until the activation and
// the new one alone after it; a chunk only the new model rejects parks
// in the new generation alone, and the activation refuses the generation
// until it is retried; the rollback is one activation. No operator
// action but the model change's own commands.
func TestModelChangeUnderLiveIngestion(t *testing.T) {
	t.Parallel()
	faults := filepath.Join(t.TempDir(), "faults.json")
	writeFile(t, faults, `{"poison": [{"match": "`+modelPoison+`", "kind": "context_length", "model": "`+largeModel+`"}]}`)
	// Small batches of a slow provider, so that the faults below land
	// while the backfill is in flight.
	f := newFleet(t, fleetOptions{dims: 384, sim: []string{"--faults", faults, "--latency", "fixed:100ms"},
		env: []string{"PARK_RETRY_DELAY=2s", "BATCH_SIZE=16", "EMBED_MAX_INPUTS=16", "BACKFILL_BACKLOG=32"}})
	consumer := f.service("consumer")
	f.service("consumer")
	f.service("outbox-relay")
	f.service("dlq-replayer")

	before := f.writeCorpus("before", 120, 80)
	writeFile(t, filepath.Join(before, "odd.txt"), "a river gate that the larger model cannot take "+modelPoison+" but the first one can")
	f.runProducer("docs", before)
	f.converge(3*time.Minute, 121)
	if s := f.search("river gate water"); s.Generation != 1 || len(s.Hits) == 0 {
		t.Fatalf("search before the change: generation %d, %d hits", s.Generation, len(s.Hits))
	}

	if code, out := f.sluice("index", "create", "--model", largeModel, "--dims", "768", "--reason", "a larger model", "--execute"); code != 0 {
		t.Fatalf("index create exited %d:\n%s", code, out)
	}
	// Live work, a delete, a kill and an outage while it builds.
	during := f.writeCorpus("during", 30, 60)
	producer := f.produce("docs", during)
	source, gone, ok := f.randomDocument()
	if !ok {
		t.Fatal("no document to delete")
	}
	if code, out := f.sluice("docs", "delete", "--source", source, "--id", gone, "--reason", "removed at the source", "--execute"); code != 0 {
		t.Fatalf("docs delete exited %d:\n%s", code, out)
	}
	if owed := f.count(laterOwedSQL); owed == 0 {
		t.Fatal("the backfill finished before the faults: they must land while it is in flight")
	} else {
		t.Logf("faults land with %d chunks owed to generation 2", owed)
	}
	consumer.kill()
	if err := f.pg.StopImmediate(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := f.pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.service("consumer")
	// A run the outage failed is run again, as its scheduler would.
	if code, err := producer.wait(3 * time.Minute); err != nil || code != 0 {
		t.Logf("the producer's run failed in the outage (exit %d, %v); running it again", code, err)
		f.runProducer("docs", during)
	}
	if s := f.search("river gate water"); s.Generation != 1 {
		t.Errorf("search while the new generation builds served generation %d, want 1", s.Generation)
	}
	f.converge(3*time.Minute, 151)

	// The chunk only the new model rejects is parked there alone, and
	// the generation stays building; the activation refuses it.
	if n := f.count(`SELECT count(*) FROM generation_parked WHERE generation = 2 AND error_class = 'context_length_exceeded'`); n != 1 {
		t.Errorf("%d chunks parked in generation 2 as context_length_exceeded, want 1", n)
	}
	if n := f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked'`); n != 0 {
		t.Errorf("%d chunks parked in generation 1, want none: the first model takes every chunk", n)
	}
	if st := f.generationStatus(2); st != "building" {
		t.Errorf("generation 2 is %q with a parked chunk, want building", st)
	}
	if code, out := f.sluice("index", "activate", "2", "--reason", "too early", "--execute"); code != 1 || !strings.Contains(out, "1 parked") {
		t.Errorf("activating generation 2 with a parked chunk: exit %d\n%s\nwant it refused", code, out)
	}

	// The provider takes the chunk now; an operator retries, and the
	// generation completes by itself.
	f.sim.kill()
	f.startSim("--latency", "fixed:100ms")
	if code, out := f.sluice("index", "retry", "2", "--reason", "the model takes it now", "--execute"); code != 0 {
		t.Fatalf("index retry exited %d:\n%s", code, out)
	}
	f.eventually(2*time.Minute, "generation 2 to become ready", func() bool { return f.generationStatus(2) == "ready" })
	if s := f.search("river gate water"); s.Generation != 1 {
		t.Errorf("search with generation 2 ready, not active, served generation %d, want 1", s.Generation)
	}

	if code, out := f.sluice("index", "activate", "2", "--reason", "the larger model", "--execute"); code != 0 {
		t.Fatalf("index activate 2 exited %d:\n%s", code, out)
	}
	s := f.search("river gate water")
	if s.Generation != 2 || s.Model != largeModel || len(s.Hits) == 0 {
		t.Fatalf("search after the activation: generation %d, model %q, %d hits; want generation 2, %s", s.Generation, s.Model, len(s.Hits), largeModel)
	}
	for _, h := range s.Hits {
		if h.DocID == gone {
			t.Errorf("search serves the deleted document %s", gone)
		}
	}
	// Every hit is generation 2's own vector, at the document's version:
	// no mix with the first generation's rows.
	if n := f.count(`SELECT count(*) FROM generation_embeddings WHERE generation = 2 AND (dims <> 768 OR model <> $1)`, largeModel); n != 0 {
		t.Errorf("%d of generation 2's vectors are not %s at 768 dimensions", n, largeModel)
	}

	if code, out := f.sluice("index", "activate", "1", "--reason", "roll back", "--execute"); code != 0 {
		t.Fatalf("rollback exited %d:\n%s", code, out)
	}
	if s := f.search("river gate water"); s.Generation != 1 || len(s.Hits) == 0 {
		t.Errorf("search after the rollback: generation %d, %d hits; want generation 1", s.Generation, len(s.Hits))
	}
	v := f.converge(2*time.Minute, 151)
	t.Logf("model change: %d documents (1 deleted), %d chunks stored; generation 2 %s",
		v.documents, v.stored, fmt.Sprint(f.count(`SELECT count(*) FROM generation_embeddings WHERE generation = 2`))+" vectors")
}
