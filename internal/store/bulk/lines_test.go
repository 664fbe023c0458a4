package bulk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
)

// repeated is a corpus text drawn from distinct: chunk i reads the
// (i mod distinct)th text, and text 3 is poison.
func repeated(distinct int) func(int) string {
	return func(i int) string {
		if i%distinct == 3 {
			return "a shared boilerplate line that holds POISON"
		}
		return fmt.Sprintf("shared paragraph %d about rivers", i%distinct)
	}
}

// A corpus of repeated texts, admitted by two sources in several
// transactions over batches that are still open or already at the
// provider, sends one request line per distinct text: every chunk that
// shares a text is stored with that text's one vector, and the poison
// text's chunks are all parked with its class.
func TestRepeatedTextsPayOnce(t *testing.T) {
	t.Parallel()
	const distinct = 7
	tb := setup(t, embedsim.Config{Faults: poisonFaults()}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 5}})
	wiki := corpus("wiki", 40, repeated(distinct))
	docs := corpus("docs", 12, repeated(distinct))
	tb.admit(t, wiki[:20])
	b, p := tb.builder(t, nil), tb.poller(t, nil)
	if err := b.Pass(tb.ctx); err != nil { // the full batch goes to the provider
		t.Fatal(err)
	}
	tb.admit(t, wiki[20:])
	tb.admit(t, docs)
	tb.converge(t, b, p)

	var lines int
	for _, pb := range tb.providerBatchList(t) {
		lines += pb.RequestCounts.Total
	}
	if lines > distinct {
		t.Errorf("the provider got %d request lines for %d distinct texts", lines, distinct)
	}
	all := append(slices.Clone(wiki), docs...)
	vectors := map[string]string{}
	for _, m := range all {
		var class *string
		var vec []float32
		if err := tb.owner.QueryRow(tb.ctx, `SELECT error_class, vector FROM test_vectors WHERE doc_id = $1 AND chunk_index = $2`,
			m.DocID, m.ChunkIndex).Scan(&class, &vec); err != nil {
			t.Fatalf("%s:%d: %v", m.DocID, m.ChunkIndex, err)
		}
		got := fmt.Sprint(vec)
		if class != nil {
			got = *class
		}
		if m.Text == repeated(distinct)(3) {
			if class == nil || *class != "bad_request" {
				t.Errorf("%s:%d of the poison text: %s, want parked as bad_request", m.DocID, m.ChunkIndex, got)
			}
			continue
		}
		if vec == nil {
			t.Errorf("%s:%d: no vector", m.DocID, m.ChunkIndex)
		}
		if want, ok := vectors[m.Text]; ok && want != got {
			t.Errorf("%s:%d: a vector other than its text's", m.DocID, m.ChunkIndex)
		}
		vectors[m.Text] = got
	}
	if twice := tb.handedTwice(t); len(twice) > 0 {
		t.Errorf("handed over twice: %v", twice)
	}
	if n := tb.metric(t, "sluice_bulk_members_total", "admitted"); int(n) != len(all) {
		t.Errorf("%v members admitted, want %d", n, len(all))
	}
}

// providerBatchList lists every batch the provider holds.
func (tb *testBundle) providerBatchList(t *testing.T) []batchapi.Batch {
	t.Helper()
	var out []batchapi.Batch
	after := ""
	for {
		page, err := tb.client.ListBatches(tb.ctx, batchapi.ListParams{Limit: 100, After: after})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Data...)
		if !page.HasMore {
			return out
		}
		after = page.LastID
	}
}

// A text admitted once the batch holding its line has completed at the
// provider, but before any of its results are applied, joins that line
// and takes its answer. Once the poller has applied a slice of the
// batch's results, a twin goes into a new line: none is left unanswered
// in the batch, to be owed when it settles.
func TestTwinsJoinACompletedBatchUntilItsResultsApply(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 4}, SliceSize: 1})
	wiki, twins := corpus("wiki", 4, plain), corpus("docs", 4, plain)
	tb.admit(t, wiki) // a full batch, sealed at once
	b := tb.builder(t, nil)
	// A poller whose applier refuses leaves the batch completed with
	// nothing applied, as one killed before its first slice does.
	refusing, err := bulk.NewPoller(tb.pool, tb.client, refusingApplier{}, requeuer{tb}, tb.cfg, tb.deps)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; tb.state(t, 1) != "completed"; i++ {
		if i == 20 {
			t.Fatalf("batch 1 is %s after 20 rounds, want completed", tb.state(t, 1))
		}
		if err := b.Pass(tb.ctx); err != nil {
			t.Fatal(err)
		}
		if err := refusing.Pass(tb.ctx); err != nil && !errors.Is(err, errRefused) {
			t.Fatal(err)
		}
		tb.clock.Advance(4 * time.Minute)
	}
	tb.admit(t, twins[:2])
	if got := tb.batches(t); len(got) != 1 {
		t.Fatalf("batches %+v after twins of a completed batch's lines, want them joined to it", got)
	}

	slice, hit := crashAt(bulk.CrashSliceApplied)
	if err := tb.poller(t, slice).Pass(tb.ctx); !*hit || !errors.Is(err, errCrash) {
		t.Fatalf("poller pass = %v, want it killed after its first slice", err)
	}
	tb.admit(t, twins[2:])
	if got := tb.batches(t); len(got) != 2 || got[1].Requests != 2 {
		t.Fatalf("batches %+v after twins of a batch being applied, want a second one of 2 lines", got)
	}
	tb.converge(t, b, tb.poller(t, nil))

	var unanswered int
	if err := tb.owner.QueryRow(tb.ctx, `SELECT unanswered FROM bulk_batches WHERE batch_id = 1`).Scan(&unanswered); err != nil || unanswered != 0 {
		t.Errorf("batch 1 left %d unanswered (%v), want 0", unanswered, err)
	}
	for k, v := range tb.outcomes(t, append(slices.Clone(wiki), twins...)) {
		if v != "stored" {
			t.Errorf("%s: %s, want stored", k, v)
		}
	}
	if got := tb.memberStates(t); got["requeued"] != 0 {
		t.Errorf("members %v, want none requeued", got)
	}
}

// errRefused is refusingApplier's answer.
var errRefused = errors.New("the applier refuses")

// refusingApplier applies nothing, as a store that is down.
type refusingApplier struct{}

func (refusingApplier) Apply(context.Context, pgx.Tx, []bulk.Result) error { return errRefused }

// Two admissions of one text at the same moment send it once: from two
// sources, whose open batches differ, the second waits for the first's
// line; from one source, while a third admission holds the open batch
// and seals it, the second finds the line in the batch sealed meanwhile.
func TestConcurrentAdmissionsOfATextShareItsLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// before is committed first; held is admitted in a transaction
		// left open while twin is admitted beside it.
		before, held []bulk.Member
		twin         bulk.Member
	}{
		{"two sources", nil, corpus("wiki", 1, plain), corpus("docs", 1, plain)[0]},
		{"a batch sealed meanwhile", corpus("wiki", 1, plain), corpus("wiki", 4, plain)[1:], member("wiki", 9, plain(0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 4}})
			if tc.before != nil {
				tb.admit(t, tc.before)
			}
			tx := mustBegin(t, tb)
			if err := tb.ledger.Admit(tb.ctx, tx, tc.held); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				done <- pgx.BeginFunc(tb.ctx, tb.pool, func(tx pgx.Tx) error {
					return tb.ledger.Admit(tb.ctx, tx, []bulk.Member{tc.twin})
				})
			}()
			testenv.Eventually(t, 10*time.Second, "the twin's admission to wait on the held one", func() bool {
				var waiting int
				err := tb.owner.QueryRow(tb.ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
				return err == nil && waiting > 0
			})
			if err := tx.Commit(tb.ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var lines, members int
			if err := tb.owner.QueryRow(tb.ctx, `SELECT (SELECT sum(requests) FROM bulk_batches), (SELECT count(*) FROM bulk_members)`).Scan(&lines, &members); err != nil {
				t.Fatal(err)
			}
			want := len(tc.before) + len(tc.held)
			if lines != want || members != want+1 {
				t.Errorf("%d request lines for %d members, want %d lines for %d", lines, members, want, want+1)
			}
		})
	}
}

// Admissions that join lines of one batch at the same moment do not wait
// on each other and both join: joining leaves the batch's row alone, and
// its members are counted when it next moves.
func TestJoinsToOneBatchNeitherWaitNorSendAgain(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 4}})
	tb.admit(t, corpus("wiki", 4, plain)) // a full batch, sealed
	first := mustBegin(t, tb)
	if err := tb.ledger.Admit(tb.ctx, first, []bulk.Member{member("docs", 0, plain(0))}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	if err := pgx.BeginFunc(ctx, tb.pool, func(tx pgx.Tx) error {
		return tb.ledger.Admit(ctx, tx, []bulk.Member{member("news", 0, plain(1))})
	}); err != nil {
		t.Fatalf("a second admission joining the same batch: %v", err)
	}
	if err := first.Commit(tb.ctx); err != nil {
		t.Fatal(err)
	}
	if got := tb.batches(t); len(got) != 1 || got[0].Requests != 4 {
		t.Fatalf("batches %+v, want the one of 4 lines, both twins joined", got)
	}
	tb.converge(t, tb.builder(t, nil), tb.poller(t, nil))
	var members, counted int
	if err := tb.owner.QueryRow(tb.ctx, `SELECT members, (SELECT count(*) FROM bulk_members) FROM bulk_batches`).Scan(&members, &counted); err != nil {
		t.Fatal(err)
	}
	if members != 6 || counted != 6 {
		t.Errorf("the settled batch counts %d members, the ledger holds %d, want 6", members, counted)
	}
}
