//go:build chaos

package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/pkg/messages"
)

// deleteDoc runs sluice docs delete --execute for one document and
// returns its exit code and output.
func (f *fleet) deleteDoc(source, docID string) (int, string) {
	f.t.Helper()
	return f.sluice("docs", "delete", "--source", source, "--id", docID, "--reason", "removed at the source", "--execute")
}

// docsOf returns the doc ids of source, in order.
func (f *fleet) docsOf(source string) []string {
	f.t.Helper()
	rows, err := f.db.Pool.Query(context.Background(), `SELECT doc_id FROM documents WHERE source_id = $1 ORDER BY doc_id`, source)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Deletes land while the consumers are working on the deleted
// documents' chunks (in INGEST, in flight, redelivered after a kill -9
// of a consumer), and the jobs of the deleted versions are published
// again afterwards, as a replay or a late redelivery would: nothing is
// written back. A delete while PostgreSQL is down fails and changes
// nothing; once it is back, the same delete succeeds. The system
// converges with no deleted document holding data anywhere, and
// `sluice docs show` says so. An erasure leak injected afterwards (a
// vector row of a deleted document, written as its owner would) makes
// reconcile exit 1 naming the document, and --redrive repairs it.
func TestDeletesAreCertainUnderLoadAndOutages(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{sim: []string{"--latency", "uniform:100ms-300ms"},
		env: []string{"BATCH_SIZE=4", "EMBED_MAX_INPUTS=4", "ACK_WAIT=2s"}})
	dir := f.writeCorpus("del", 30, 80)
	f.runProducer("del", dir)
	ids := f.docsOf("del")
	if len(ids) != 30 {
		t.Fatalf("%d documents recorded, want 30", len(ids))
	}
	// The deleted versions' jobs, as published, for the late arrivals.
	rows, err := f.db.Pool.Query(context.Background(), `SELECT job FROM ingest_manifest WHERE doc_id = ANY($1) AND job IS NOT NULL`, ids[:10])
	if err != nil {
		t.Fatal(err)
	}
	var jobs [][]byte
	for rows.Next() {
		var job []byte
		if err := rows.Scan(&job); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	rows.Close()
	if len(jobs) < 10 {
		t.Fatalf("%d jobs captured, want one a document at least", len(jobs))
	}

	// Consumers start on the backlog; one is killed mid-work, so its
	// batch is redelivered; the deletes land meanwhile.
	consumer := f.service("consumer")
	f.service("consumer")
	f.service("outbox-relay")
	f.service("dlq-replayer")
	f.eventually(time.Minute, "the consumers to have stored some chunks", func() bool {
		n, ok := f.tryCount(`SELECT count(*) FROM chunk_embeddings`)
		return ok && n > 0
	})
	consumer.kill()
	for _, id := range ids[:5] {
		if code, out := f.deleteDoc("del", id); code != 0 {
			t.Fatalf("docs delete %s exited %d:\n%s", id, code, out)
		}
	}
	f.service("consumer")

	// A delete while PostgreSQL is down fails, and works once it is back.
	if err := f.pg.StopImmediate(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out := f.deleteDoc("del", ids[5])
	if err := f.pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code == 0 {
		t.Fatalf("docs delete succeeded with PostgreSQL down:\n%s", out)
	}
	for _, id := range ids[5:10] {
		f.eventually(30*time.Second, "the delete to succeed once PostgreSQL is back", func() bool {
			code, _ := f.deleteDoc("del", id)
			return code == 0
		})
	}

	// Late arrivals: the deleted versions' jobs again, on the replay
	// subject and under new message ids.
	ctx := context.Background()
	for i, job := range jobs {
		if _, err := f.js.Publish(ctx, messages.ReplaySubject("del"), job, jetstream.WithMsgID(fmt.Sprintf("late-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	v := f.converge(3*time.Minute, 30)
	if v.deleted != 10 {
		t.Errorf("%d documents deleted, want 10", v.deleted)
	}
	if n := f.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = ANY($1)`, ids[:10]); n != 0 {
		t.Errorf("%d vectors of deleted documents", n)
	}
	if n := f.count(`SELECT count(*) FROM documents WHERE doc_id = ANY($1) AND status = 'ready'`, ids[10:]); n != 20 {
		t.Errorf("%d of the 20 documents kept are ready", n)
	}
	if code, out := f.sluice("docs", "show", ids[0]); code != 0 || !strings.Contains(out, "status deleted") ||
		!strings.Contains(out, "now: 0 vectors, 0 text rows, 0 payloads") || !strings.Contains(out, "removed at the source") {
		t.Errorf("docs show exited %d:\n%s", code, out)
	}

	// An erasure leak, injected as the vector store's owner would write
	// a row, is found and repaired.
	f.sqlExec(`INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
		SELECT $1, 0, 1, 'h', 'm', dims, embedding, 'leaked text' FROM chunk_embeddings WHERE doc_id = $2 LIMIT 1`, ids[0], ids[10])
	code, out = f.sluice("reconcile")
	if code != 1 || !strings.Contains(out, ids[0]) {
		t.Fatalf("reconcile after a leak exited %d, want 1 naming %s:\n%s", code, ids[0], out)
	}
	if code, out := f.sluice("reconcile", "--redrive"); code != 0 {
		t.Fatalf("reconcile --redrive exited %d:\n%s", code, out)
	}
	if code, out := f.sluice("reconcile"); code != 0 {
		t.Fatalf("reconcile after the repair exited %d:\n%s", code, out)
	}
}
