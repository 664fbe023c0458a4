package bulk_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/pkg/classify"
)

// poisoned is the text of a generated corpus in which every 37th chunk is
// refused (400), every 41st answered with a vector of the wrong size, and
// every 43rd too long for the model.
func poisoned(i int) string {
	switch {
	case i%37 == 5:
		return fmt.Sprintf("chunk %d holds POISON", i)
	case i%41 == 7:
		return fmt.Sprintf("chunk %d holds WRONGDIMS", i)
	case i%43 == 9:
		return fmt.Sprintf("chunk %d holds TOOLONG", i)
	}
	return plain(i)
}

func poisonFaults() embedsim.Faults {
	return embedsim.Faults{Poison: []embedsim.PoisonRule{
		{Match: "POISON", Kind: embedsim.PoisonInvalidInput},
		{Match: "WRONGDIMS", Kind: embedsim.PoisonWrongDims},
		{Match: "TOOLONG", Kind: embedsim.PoisonContextLength},
	}}
}

// A bulk load of a generated corpus with poison lines, over several
// batches of two sources and in shuffled output order, ends with every
// chunk stored or parked with the class a live call would give, none
// lost, none handed over twice.
func TestBulkLoadWithPoisonConverges(t *testing.T) {
	t.Parallel()
	sim := embedsim.Config{Faults: poisonFaults()}
	sim.Batch = phases()
	sim.Batch.OutputOrder = embedsim.OrderShuffle
	tb := setup(t, sim, bulk.Config{Limits: batchapi.Limits{MaxRequests: 60}, SliceSize: 25})
	wiki := corpus("wiki", 300, poisoned)
	docs := corpus("docs", 40, other)
	for i := 0; i < len(wiki); i += 50 {
		tb.admit(t, wiki[i:min(i+50, len(wiki))])
	}
	tb.admit(t, docs)

	rounds := tb.converge(t, tb.builder(t, nil), tb.poller(t, nil))

	want := map[string]int{}
	for i, m := range wiki {
		got := tb.outcomes(t, []bulk.Member{m})[fmt.Sprintf("%s:%d", m.DocID, m.ChunkIndex)]
		class := "stored"
		switch text := poisoned(i); {
		case strings.Contains(text, "POISON"):
			class = classify.ClassBadRequest
		case strings.Contains(text, "WRONGDIMS"):
			class = classify.ClassDimensionMismatch
		case strings.Contains(text, "TOOLONG"):
			class = classify.ClassContextLength
		}
		want[class]++
		if got != class {
			t.Errorf("%s chunk %d: %s, want %s", m.DocID, m.ChunkIndex, got, class)
		}
	}
	for k, v := range tb.outcomes(t, docs) {
		if v != "stored" {
			t.Errorf("%s: %s, want stored", k, v)
		}
	}
	if twice := tb.handedTwice(t); len(twice) > 0 {
		t.Errorf("handed to the Applier twice: %v", twice)
	}
	var kept int
	if err := tb.owner.QueryRow(tb.ctx, `SELECT count(*) FROM bulk_members WHERE text <> ''`).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("%d settled members keep their text (%v), want none", kept, err)
	}
	members := tb.memberStates(t)
	parked := want[classify.ClassBadRequest] + want[classify.ClassDimensionMismatch] + want[classify.ClassContextLength]
	if members["applied"] != len(wiki)+len(docs)-parked || members["parked"] != parked || members["pending"] != 0 || members["requeued"] != 0 {
		t.Errorf("members %v, want %d applied and %d parked", members, len(wiki)+len(docs)-parked, parked)
	}
	// 300 chunks at 60 a batch are 5 full batches; the 40 of docs one more.
	if batches := tb.batchStates(t); batches["applied"] != 6 || len(batches) != 1 {
		t.Errorf("batches %v, want 6 applied", batches)
	}
	for id, n := range tb.providerBatches(t) {
		if n != 1 {
			t.Errorf("ledger batch %s has %d provider batches, want 1", id, n)
		}
	}
	admitted := tb.metric(t, "sluice_bulk_members_total", "admitted")
	uploads := tb.metric(t, "sluice_bulk_provider_requests_total", "upload")
	if admitted != float64(len(wiki)+len(docs)) || uploads != 6 || tb.metric(t, "sluice_bulk_batches", "applied") != 6 {
		t.Errorf("metrics: %v admitted, %v uploads, want %d and 6", admitted, uploads, len(wiki)+len(docs))
	}
	// Settled, the batches' files go from the provider: the request
	// files held every chunk's text.
	if err := tb.poller(t, nil).Pass(tb.ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := tb.owner.Query(tb.ctx, `SELECT input_file_id, output_file_id, coalesce(error_file_id, ''), files_purged_at IS NOT NULL FROM bulk_batches`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var in, out, errs string
		var purged bool
		if err := rows.Scan(&in, &out, &errs, &purged); err != nil {
			t.Fatal(err)
		}
		if !purged {
			t.Errorf("the batch of file %s is settled but its files are not recorded deleted", in)
		}
		for _, id := range []string{in, out, errs} {
			if _, err := tb.client.File(tb.ctx, id); id != "" && !errors.Is(err, batchapi.ErrNotFound) {
				t.Errorf("file %s still at the provider after its batch settled (%v)", id, err)
			}
		}
	}
	t.Logf("converged in %d rounds; %v", rounds, want)
}
