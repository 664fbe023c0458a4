package producer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/migrations"
)

// A run's summary counts what a user would otherwise not see: the chunks
// held back because a secret touches them, and the documents that were
// not UTF-8 and were read as Windows-1252. A second run over the same
// files re-decodes nothing new.
func TestSummaryCountsEscalationsAndRedecodedDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	dir, write := corpusWriter(t)
	write("plain.txt", "a plain note about the gates of the valley")
	write("latin1.txt", "caf\xe9 au lait, \x93quoted\x94 by the lock keeper")
	const secret = "AKIA" + "IOSFODNN7EXAMPLE"
	write("keys.txt", strings.Repeat("harmless text about rivers. ", 6)+"key = "+secret)
	pool := db.RolePool(t, migrations.ProducerRole)
	run := func() producer.Summary {
		t.Helper()
		r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := producer.New(producer.Config{SourceID: "docs"}, pool, js, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		sum, err := p.Run(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	sum := run()
	if sum.Escalated != 1 || sum.ParkedDocs != 1 {
		t.Errorf("escalated %d chunks (parked %d), want keys.txt's one chunk", sum.Escalated, sum.ParkedDocs)
	}
	if len(sum.Redecoded) != 1 || sum.Redecoded[corpus.CodecWindows1252] != 1 {
		t.Errorf("re-decoded %v, want latin1.txt as windows-1252", sum.Redecoded)
	}
	if again := run(); again.Escalated != 0 || len(again.Redecoded) != 0 {
		t.Errorf("a run over unchanged files escalated %d chunks and re-decoded %v, want nothing new", again.Escalated, again.Redecoded)
	}
}
