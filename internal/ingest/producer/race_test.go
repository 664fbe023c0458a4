package producer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/pkg/messages"
)

// corpusWriter returns a directory for a corpus and a function that
// writes a document into it.
func corpusWriter(t *testing.T) (string, func(name, text string)) {
	dir := t.TempDir()
	return dir, func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A delete that commits between a run's plan of a new version and its
// record takes the version the run meant to record: the run writes and
// publishes nothing of the document (no job bytes, no dead letter, no
// message), and the document stays deleted.
func TestADeleteBetweenPlanAndRecordWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	dir, write := corpusWriter(t)
	write("a.txt", "the first version of a")
	write("b.txt", "the first version of b")
	run := func(crash func(string)) {
		t.Helper()
		r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := producer.New(producer.Config{SourceID: "docs"}, db.Pool, js, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		p.Crash = crash
		if _, err := p.Run(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	run(nil)
	a := messages.DocID("docs", "a.txt")
	write("a.txt", "the second version of a, which a delete overtakes")
	write("b.txt", "the second version of b, recorded as usual")
	run(func(point string) {
		if point != "after-plan-before-record" {
			return
		}
		if _, err := erase.New(db.Pool, nil).Delete(ctx, erase.Request{SourceID: "docs", DocIDs: []string{a}, By: "cli:t", Reason: "race", Execute: true}); err != nil {
			t.Error(err)
		}
	})
	var status string
	var version int64
	if err := db.Pool.QueryRow(ctx, `SELECT status, version FROM documents WHERE doc_id = $1`, a).Scan(&status, &version); err != nil {
		t.Fatal(err)
	}
	if status != "deleted" || version != 2 {
		t.Errorf("a is %s at version %d, want deleted at 2", status, version)
	}
	var jobs, live int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE job IS NOT NULL), count(*) FILTER (WHERE status <> 'superseded')
		FROM ingest_manifest WHERE doc_id = $1`, a).Scan(&jobs, &live); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 || live != 0 {
		t.Errorf("a's manifest: %d rows with job bytes, %d not superseded; want none", jobs, live)
	}
	stream, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := messages.ChunkSubject("docs")
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	// a's and b's first versions and b's second: three messages, nothing
	// of the version of a the delete overtook.
	if got := info.State.Subjects[subject]; got != 3 {
		t.Errorf("%d messages on %s, want 3 (none of the version the delete overtook)", got, subject)
	}
}
