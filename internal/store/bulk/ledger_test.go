package bulk_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
)

// batchRow is what the ledger says of one batch.
type batchRow struct {
	State    string
	Requests int
	Bytes    int64
	Tokens   int64
}

func (tb *testBundle) batches(t *testing.T) []batchRow {
	t.Helper()
	rows, err := tb.owner.Query(tb.ctx, `SELECT state, requests, bytes, tokens FROM bulk_batches ORDER BY batch_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []batchRow
	for rows.Next() {
		var r batchRow
		if err := rows.Scan(&r.State, &r.Requests, &r.Bytes, &r.Tokens); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Admit seals a batch before a member would take it past each limit, and
// the file the builder then writes stays within it.
func TestAdmitSealsAtEachLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits batchapi.Limits
		// sizes are the requests of each batch, the last one open.
		sizes []int
	}{
		{"requests", batchapi.Limits{MaxRequests: 4}, []int{4, 4, 2}},
		{"inputs", batchapi.Limits{MaxInputs: 3}, []int{3, 3, 3, 1}},
		{"bytes", batchapi.Limits{MaxBytes: 900}, []int{3, 3, 3, 1}},
		{"tokens", batchapi.Limits{MaxTokens: 40}, []int{3, 3, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, embedsim.Config{}, bulk.Config{Limits: tc.limits})
			tb.admit(t, corpus("wiki", 6, plain))
			tb.admit(t, corpus("wiki", 10, plain)[6:])
			got := tb.batches(t)
			if len(got) != len(tc.sizes) {
				t.Fatalf("batches %+v, want sizes %v", got, tc.sizes)
			}
			for i, b := range got {
				state := "sealed"
				if i == len(got)-1 && tc.sizes[i] < 4 {
					state = "open"
				}
				if b.State != state || b.Requests != tc.sizes[i] {
					t.Errorf("batch %d = %+v, want %s with %d", i+1, b, state, tc.sizes[i])
				}
				if (tc.limits.MaxBytes > 0 && b.Bytes > tc.limits.MaxBytes) || (tc.limits.MaxTokens > 0 && b.Tokens > int64(tc.limits.MaxTokens)) {
					t.Errorf("batch %d = %+v, past the limits", i+1, b)
				}
			}
			// The files built honour the limits too: built with them, the
			// builder would refuse a request past one.
			tb.clock.Advance(time.Hour)
			if err := tb.builder(t, nil).Pass(tb.ctx); err != nil {
				t.Fatal(err)
			}
			if got := tb.batchStates(t); got["created"] != len(tc.sizes) || len(got) != 1 {
				t.Errorf("after a pass of the builder: %v, want %d created", got, len(tc.sizes))
			}
		})
	}
}

// A redelivered chunk job is admitted once; a newer version of the same
// chunk is admitted beside it, on the same request line as its text is
// the same; a chunk too large for any batch is refused
// with nothing recorded; and an open batch is sealed once old enough.
func TestAdmitOnceRefuseTooLargeSealByAge(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{MaxAge: 10 * time.Minute, Limits: batchapi.Limits{MaxRequestTokens: 50}})
	ms := corpus("wiki", 5, plain)
	tb.admit(t, ms)
	tb.admit(t, ms[:3])
	newer := ms[0]
	newer.Version = 2
	tb.admit(t, []bulk.Member{newer})
	if got := tb.batches(t); len(got) != 1 || got[0].Requests != 5 {
		t.Fatalf("batches %+v, want one of 5 request lines", got)
	}
	if got := tb.memberStates(t); got["pending"] != 6 {
		t.Fatalf("members %v, want 6 pending", got)
	}

	huge := member("wiki", 9, strings.Repeat("river ", 200))
	err := tb.ledger.Admit(tb.ctx, mustBegin(t, tb), []bulk.Member{ms[4], huge})
	var refused *bulk.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, bulk.ErrTooLarge) || len(refused.Refused) != 1 ||
		refused.Refused[0].Member.ChunkIndex != huge.ChunkIndex || !errors.Is(refused.Refused[0].Err, batchapi.ErrRequestTooLarge) {
		t.Fatalf("Admit of a huge chunk = %v, want it refused alone", err)
	}

	l := tb.ledger
	if n, err := l.SealDue(tb.ctx, tb.pool); err != nil || n != 0 {
		t.Fatalf("SealDue at once = %d, %v; want nothing sealed", n, err)
	}
	tb.clock.Advance(10 * time.Minute)
	if n, err := l.SealDue(tb.ctx, tb.pool); err != nil || n != 1 {
		t.Fatalf("SealDue after MaxAge = %d, %v; want the batch sealed", n, err)
	}
	tb.admit(t, corpus("wiki", 8, plain)[5:])
	if got := tb.batches(t); len(got) != 2 || got[1].State != "open" || got[1].Requests != 3 {
		t.Fatalf("batches %+v, want a new open one of 3", got)
	}
}
