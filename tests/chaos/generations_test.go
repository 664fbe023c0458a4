//go:build chaos

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
)

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

// pgOutage stops PostgreSQL at once, as a crash would, and starts it
// again after d.
func (f *fleet) pgOutage(d time.Duration) {
	f.t.Helper()
	if err := f.pg.StopImmediate(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	time.Sleep(d)
	if err := f.pg.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// activateLarger activates generation 2, of largeModel, for reason, and
// checks that a search for query is served by it alone, with hits and
// none of the deleted document gone.
func (f *fleet) activateLarger(reason, query, gone string) {
	f.t.Helper()
	if code, out := f.sluice("index", "activate", "2", "--reason", reason, "--execute"); code != 0 {
		f.t.Fatalf("index activate 2 exited %d:\n%s", code, out)
	}
	s := f.search(query)
	if s.Generation != 2 || s.Model != largeModel || len(s.Hits) == 0 {
		f.t.Fatalf("search after the activation: generation %d, model %q, %d hits; want generation 2, %s", s.Generation, s.Model, len(s.Hits), largeModel)
	}
	for _, h := range s.Hits {
		if h.DocID == gone {
			f.t.Errorf("search serves the deleted document %s", gone)
		}
	}
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
	f.pgOutage(3 * time.Second)
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

	f.activateLarger("the larger model", "river gate water", gone)
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

// TestChunkingChangeRecutsFromSources changes the chunking (200 → 90
// characters, with overlap) and the model of a running deployment, every
// service a process as its own role. The new generation is recut: it
// owes every document until the sources' next runs cut it, and the
// activation refuses it meanwhile (forced, reconcile reports what it
// lacks until it is rolled back). The runs cut changed and unchanged
// documents alike; the backfill embeds those chunks while a consumer is
// killed with -9, a document is deleted and PostgreSQL stops; the
// generation completes by itself, holding its own chunks (more than
// generation 1's) and nothing of the deleted document, and search
// serves it alone once it is activated. No operator action but the
// change's own commands and the sources' runs.
func TestChunkingChangeRecutsFromSources(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{dims: 384, sim: []string{"--latency", "fixed:50ms"},
		env: []string{"BATCH_SIZE=16", "EMBED_MAX_INPUTS=16", "BACKFILL_BACKLOG=32"}})
	consumer := f.service("consumer")
	f.service("consumer")
	f.service("outbox-relay")
	f.service("dlq-replayer")

	docs := f.writeCorpus("recut", 60, 60)
	f.runProducer("docs", docs)
	f.converge(3*time.Minute, 60)
	firstChunks := f.count(`SELECT count(*) FROM chunk_embeddings`)

	code, out := f.sluice("index", "create", "--model", largeModel, "--dims", "768", "--chunk-size", "90", "--chunk-overlap", "10",
		"--reason", "smaller chunks", "--execute")
	if code != 0 || !strings.Contains(out, "recut") {
		t.Fatalf("index create with another chunking exited %d:\n%s\nwant a recut generation", code, out)
	}
	if n := f.count(uncutSQL); n != 60 {
		t.Errorf("%d documents not cut for the new generation before any run, want all 60", n)
	}
	if code, out := f.sluice("index", "activate", "2", "--reason", "too early", "--execute"); code != 1 || !strings.Contains(out, "60 documents not cut") {
		t.Errorf("activating a generation no run has cut: exit %d\n%s\nwant it refused for its 60 documents not cut", code, out)
	}
	// Forced, it serves nothing of them, and reconcile says so until it
	// is rolled back.
	if code, out := f.sluice("index", "activate", "2", "--force", "--reason", "try it early", "--execute"); code != 0 {
		t.Fatalf("a forced activation exited %d:\n%s", code, out)
	}
	if code, out := f.sluice("reconcile"); code != 1 || !strings.Contains(out, "60 documents not cut yet") {
		t.Errorf("reconcile with a generation active that no run has cut: exit %d\n%s\nwant 1, naming its 60 documents not cut", code, out)
	}
	if code, out := f.sluice("index", "activate", "1", "--reason", "roll back", "--execute"); code != 0 {
		t.Fatalf("rollback exited %d:\n%s", code, out)
	}

	// The sources' next run: one document changed, one new, the rest
	// unchanged; a kill and a delete while the backfill is in flight.
	writeFile(t, filepath.Join(docs, "recut-0003.txt"), strings.Repeat("an edited river gate paragraph flows on ", 20))
	writeFile(t, filepath.Join(docs, "recut-new.txt"), strings.Repeat("a new river gate document flows in ", 20))
	f.runProducer("docs", docs)
	if owed := f.count(laterOwedSQL); owed == 0 {
		t.Fatal("the backfill finished before the faults: they must land while it is in flight")
	} else {
		t.Logf("faults land with %d chunks owed to generation 2", owed)
	}
	consumer.kill()
	gone := messages.DocID("docs", "recut-0007.txt")
	if code, out := f.sluice("docs", "delete", "--source", "docs", "--id", gone, "--reason", "removed at the source", "--execute"); code != 0 {
		t.Fatalf("docs delete exited %d:\n%s", code, out)
	}
	f.pgOutage(3 * time.Second)
	f.service("consumer")
	if s := f.search("river gate flows"); s.Generation != 1 {
		t.Errorf("search while the recut generation builds served generation %d, want 1", s.Generation)
	}
	v := f.converge(3*time.Minute, 61)
	if n := f.count(uncutSQL); n != 0 {
		t.Errorf("%d documents not cut after the sources' run, want none", n)
	}
	// Rolled back, generation 2 is retired rather than building; it is
	// complete once its backfill owes nothing, which the activation
	// below, unforced, checks again.
	f.eventually(2*time.Minute, "generation 2 to owe nothing", func() bool { return f.count(laterOwedSQL) == 0 })

	// Generation 2 holds its own chunks: at most 90 characters, more of
	// them than generation 1's, each the text its cut recorded.
	later := f.count(`SELECT count(*) FROM generation_embeddings WHERE generation = 2`)
	if later <= v.stored {
		t.Errorf("generation 2 holds %d vectors for generation 1's %d chunks, want more: its chunks are smaller", later, v.stored)
	}
	if n := f.count(`SELECT count(*) FROM generation_embeddings WHERE generation = 2 AND length(text) > 90`); n != 0 {
		t.Errorf("%d of generation 2's chunks are longer than its 90 characters", n)
	}
	if n := f.count(`
		SELECT count(*) FROM generation_embeddings e
		LEFT JOIN generation_chunks c ON c.generation = 2 AND c.doc_id = e.doc_id AND c.chunk_index = e.chunk_index
		     AND c.version = e.version AND c.content_hash = e.content_hash AND c.text = e.text
		WHERE e.generation = 2 AND c.doc_id IS NULL`); n != 0 {
		t.Errorf("%d of generation 2's vectors are not of a chunk its cuts recorded", n)
	}
	if n := f.count(`SELECT count(*) FROM generation_chunks WHERE doc_id = $1`, gone); n != 0 {
		t.Errorf("the deleted document still has %d cut chunks", n)
	}

	f.activateLarger("smaller chunks", "an edited river gate paragraph", gone)
	t.Logf("chunking change: %d documents, generation 1 %d chunks before the run and %d after, generation 2 %d",
		v.documents, firstChunks, v.stored, later)
}

// uncutSQL counts, over every recut generation not dropped, the
// documents not deleted that it has not cut at their current version.
const uncutSQL = `
SELECT count(*)
FROM index_generations g
JOIN documents d ON d.status <> 'deleted'
WHERE g.recut AND g.status <> 'dropped'
  AND NOT EXISTS (SELECT 1 FROM generation_documents c WHERE c.generation = g.generation AND c.doc_id = d.doc_id AND c.version = d.version)`
