package batchapi_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
)

// runToEnd moves a batch through its phases until it is final.
func (tb *testBundle) runToEnd(t *testing.T, id string) *batchapi.Batch {
	t.Helper()
	for range 100 {
		b := tb.get(t, id, time.Minute)
		if b.Status.Final() {
			return b
		}
	}
	t.Fatalf("batch %s not final after 100 minutes", id)
	return nil
}

func TestPoisonLinesClassifyAsLive(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{
		MaxInputTokens: 20,
		Batch:          phases(),
		Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{
			{Match: "POISON", Kind: embedsim.PoisonInvalidInput},
			{Match: "TOOLONG", Kind: embedsim.PoisonContextLength},
			{Match: "WRONGDIMS", Kind: embedsim.PoisonWrongDims},
			{Match: "NOTANUMBER", Kind: embedsim.PoisonNaN},
		}},
	})
	reqs := []request{
		{"fine", []string{"an ordinary chunk of text"}},
		{"invalid", []string{"POISON alone"}},
		{"second-invalid", []string{"clean first", "POISON second"}},
		{"context-rule", []string{"TOOLONG by rule"}},
		{"context-tokens", []string{strings.Repeat("many words here ", 12)}},
		{"wrong-dims", []string{"fine", "WRONGDIMS"}},
		{"nan", []string{"NOTANUMBER"}},
	}
	b := tb.runToEnd(t, tb.submit(t, build(t, reqs)).ID)
	if b.Status != batchapi.StatusCompleted || b.RequestCounts != (batchapi.RequestCounts{Total: 7, Completed: 3, Failed: 4}) {
		t.Fatalf("batch = %s %+v", b.Status, b.RequestCounts)
	}
	errorLines := byID(t, tb.results(t, b.ErrorFileID))
	outputLines := byID(t, tb.results(t, b.OutputFileID))
	live := tb.live(t)
	for _, r := range reqs {
		_, liveErr := live.Embed(tb.ctx, r.inputs)
		res, inErrors := errorLines[r.id]
		if !inErrors {
			res = outputLines[r.id]
		}
		if res.CustomID != r.id {
			t.Fatalf("%s: no result", r.id)
		}
		// A provider's refusal goes to the error file; an answer with a bad
		// vector is a 200 and goes to the output file.
		var se *classify.StatusError
		if errors.As(liveErr, &se) != inErrors {
			t.Errorf("%s: in the error file %v, live status error %v", r.id, inErrors, liveErr)
		}
		got, want := classify.Classify(res.Err), classify.Classify(liveErr)
		if got != want {
			t.Errorf("%s: batch line classifies %+v, live %+v (batch %v, live %v)", r.id, got, want, res.Err, liveErr)
		}
		var bi, li *embedder.InputError
		if errors.As(res.Err, &bi) != errors.As(liveErr, &li) || (bi != nil && bi.Index != li.Index) {
			t.Errorf("%s: batch blames %+v, live %+v", r.id, bi, li)
		}
	}
	if d := classify.Classify(errorLines["context-tokens"].Err); d.Class != classify.ClassContextLength {
		t.Errorf("an input over the context classifies %+v", d)
	}
	if res := outputLines["fine"]; res.Err != nil || len(res.Vectors) != 1 {
		t.Errorf("fine line: %+v", res)
	}
}

func TestExpirySplitsFinishedAndUnfinishedLines(t *testing.T) {
	t.Parallel()
	cfg := phases()
	cfg.Window = time.Hour
	cfg.Faults.ExpireRate = 1
	tb := setup(t, embedsim.Config{Batch: cfg})
	var reqs []request
	for i := range 10 {
		reqs = append(reqs, request{fmt.Sprintf("r%02d", i), []string{fmt.Sprintf("text number %d", i)}})
	}
	created := tb.submit(t, build(t, reqs))
	b := tb.get(t, created.ID, 59*time.Minute+59*time.Second)
	if b.Status != batchapi.StatusInProgress {
		t.Fatalf("a second before the window closes: %s", b.Status)
	}
	b = tb.get(t, created.ID, time.Second)
	if b.Status != batchapi.StatusExpired || b.ExpiredAt != b.ExpiresAt || b.FinalizingAt != 0 {
		t.Fatalf("batch at its window's end = %+v", b)
	}
	// The batch ran at half the pace it needed: the first half ran.
	if b.RequestCounts != (batchapi.RequestCounts{Total: 10, Completed: 5, Failed: 5}) {
		t.Fatalf("counts = %+v", b.RequestCounts)
	}
	done := customIDs(tb.results(t, b.OutputFileID))
	slices.Sort(done)
	if want := []string{"r00", "r01", "r02", "r03", "r04"}; !slices.Equal(done, want) {
		t.Errorf("output file holds %v, want %v", done, want)
	}
	left := tb.results(t, b.ErrorFileID)
	if len(left) != 5 {
		t.Fatalf("error file holds %d lines, want 5", len(left))
	}
	for _, r := range left {
		d := classify.Classify(r.Err)
		if !errors.Is(r.Err, batchapi.ErrRequestExpired) || r.StatusCode != 0 ||
			d != (classify.Decision{Disposition: classify.Retry, Class: classify.ClassTimeout, Code: batchapi.CodeExpired}) {
			t.Errorf("%s: %v classified %+v, want a retryable batch_expired", r.CustomID, r.Err, d)
		}
		if r.CustomID < "r05" {
			t.Errorf("%s ran but is in the error file", r.CustomID)
		}
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{Batch: phases()})
	var reqs []request
	for i := range 4 {
		reqs = append(reqs, request{fmt.Sprintf("c%d", i), []string{fmt.Sprintf("cancel me %d", i)}})
	}
	created := tb.submit(t, build(t, reqs))
	tb.get(t, created.ID, time.Minute+5*time.Minute) // half of the requests ran
	b, err := tb.client.CancelBatch(tb.ctx, created.ID)
	if err != nil || b.Status != batchapi.StatusCancelling || b.CancellingAt == 0 {
		t.Fatalf("cancel: %+v, %v", b, err)
	}
	if b = tb.get(t, created.ID, 30*time.Second); b.Status != batchapi.StatusCancelling {
		t.Fatalf("half-way through cancelling: %s", b.Status)
	}
	b = tb.get(t, created.ID, 30*time.Second)
	if b.Status != batchapi.StatusCancelled || b.CancelledAt != b.CancellingAt+60 {
		t.Fatalf("cancelled batch = %+v", b)
	}
	if got := len(tb.results(t, b.OutputFileID)); got != 2 {
		t.Errorf("output holds %d lines, want the 2 that ran before the cancel", got)
	}
	for _, r := range tb.results(t, b.ErrorFileID) {
		if !errors.Is(r.Err, batchapi.ErrRequestCancelled) || classify.Classify(r.Err).Class != classify.ClassCanceled || !classify.IsRetryable(r.Err) {
			t.Errorf("%s: %v, want a retryable batch_cancelled", r.CustomID, r.Err)
		}
	}
	var ae *batchapi.APIError
	if _, err := tb.client.CancelBatch(tb.ctx, created.ID); !errors.As(err, &ae) || ae.Status.StatusCode != 400 {
		t.Errorf("cancelling a cancelled batch: %v, want a 400", err)
	}
	if _, err := tb.client.CancelBatch(tb.ctx, "batch_unknown"); !errors.Is(err, batchapi.ErrNotFound) {
		t.Errorf("cancelling an unknown batch: %v, want ErrNotFound", err)
	}
}

func TestLostBatchIsNotFound(t *testing.T) {
	t.Parallel()
	cfg := phases()
	cfg.Faults.LoseRate = 1
	tb := setup(t, embedsim.Config{Batch: cfg})
	lost := tb.submit(t, build(t, []request{{"x", []string{"gone"}}}))
	if b := tb.get(t, lost.ID, 0); b.Status != batchapi.StatusValidating {
		t.Fatalf("before it is lost: %s", b.Status)
	}
	tb.clock.Advance(time.Minute)
	_, err := tb.client.Batch(tb.ctx, lost.ID)
	if !errors.Is(err, batchapi.ErrNotFound) {
		t.Fatalf("lost batch: %v, want ErrNotFound", err)
	}
	if d := classify.Classify(err); d.Class != classify.ClassNotFound {
		t.Errorf("lost batch classifies %+v", d)
	}
	page, err := tb.client.ListBatches(tb.ctx, batchapi.ListParams{})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("list after the loss: %+v, %v", page, err)
	}

	// A batch lost later, by hand.
	if err := tb.sim.SetBatchFaults(embedsim.BatchFaults{}); err != nil {
		t.Fatal(err)
	}
	kept := tb.submit(t, build(t, []request{{"y", []string{"kept"}}}))
	if b := tb.get(t, kept.ID, 2*time.Minute); b.Status != batchapi.StatusInProgress {
		t.Fatalf("second batch: %s", b.Status)
	}
	if !tb.sim.LoseBatch(kept.ID) {
		t.Fatal("LoseBatch: no such batch")
	}
	if _, err := tb.client.Batch(tb.ctx, kept.ID); !errors.Is(err, batchapi.ErrNotFound) {
		t.Fatalf("batch lost in progress: %v, want ErrNotFound", err)
	}
}

func TestShuffledOutputMatchesByCustomID(t *testing.T) {
	t.Parallel()
	cfg := phases()
	cfg.OutputOrder = embedsim.OrderShuffle
	tb := setup(t, embedsim.Config{Batch: cfg, Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "POISON", Kind: embedsim.PoisonInvalidInput}}}})
	var reqs []request
	for i := range 40 {
		text := fmt.Sprintf("chunk %d of a long document", i)
		if i%10 == 3 {
			text = "POISON " + text
		}
		reqs = append(reqs, request{fmt.Sprintf("s%02d", i), []string{text}})
	}
	b := tb.runToEnd(t, tb.submit(t, build(t, reqs)).ID)
	out, bad := tb.results(t, b.OutputFileID), tb.results(t, b.ErrorFileID)
	if ids := customIDs(out); slices.IsSorted(ids) {
		t.Fatalf("output in input order %v: the file was not shuffled", ids)
	}
	got := byID(t, out, bad)
	if len(got) != len(reqs) || len(bad) != 4 {
		t.Fatalf("%d results, %d failed; want %d and 4", len(got), len(bad), len(reqs))
	}
	vec := make([]float32, testDims)
	for _, r := range reqs {
		res := got[r.id]
		if strings.HasPrefix(r.inputs[0], "POISON") {
			if !errors.As(res.Err, new(*embedder.InputError)) {
				t.Errorf("%s: %v, want its input blamed", r.id, res.Err)
			}
			continue
		}
		embedsim.EmbedInto(vec, r.inputs[0])
		if res.Err != nil || !slices.Equal(res.Vectors[0], vec) {
			t.Errorf("%s: result is not its own input's vector (%v)", r.id, res.Err)
		}
	}
}

func TestEnqueuedTokenQuota(t *testing.T) {
	t.Parallel()
	cfg := phases()
	cfg.EnqueuedTokens = 30
	tb := setup(t, embedsim.Config{Batch: cfg})
	// About 20 tokens each: two do not fit together.
	file := func(id string) []byte {
		return build(t, []request{{id, []string{strings.Repeat("token ", 20)}}})
	}
	first := tb.submit(t, file("a"))
	second := tb.submit(t, file("b"))
	tb.clock.Advance(time.Minute)
	if b := tb.get(t, first.ID, 0); b.Status != batchapi.StatusInProgress {
		t.Fatalf("first batch: %s %+v", b.Status, b.Errors)
	}
	b := tb.get(t, second.ID, 0)
	if b.Status != batchapi.StatusFailed || len(b.Errors.Data) != 1 || b.Errors.Data[0].Code != "token_limit_exceeded" {
		t.Fatalf("second batch past the quota: %s %+v", b.Status, b.Errors)
	}
	// The first batch's tokens are returned when it ends.
	tb.runToEnd(t, first.ID)
	third := tb.submit(t, file("c"))
	if b := tb.get(t, third.ID, time.Minute); b.Status != batchapi.StatusInProgress {
		t.Fatalf("third batch, after the first ended: %s %+v", b.Status, b.Errors)
	}
}

func TestFailedBatchAndSlowFinalize(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{Batch: phases()})
	if err := tb.sim.SetBatchFaults(embedsim.BatchFaults{FailRate: 1}); err != nil {
		t.Fatal(err)
	}
	failed := tb.submit(t, build(t, []request{{"f", []string{"fails"}}}))
	if err := tb.sim.SetBatchFaults(embedsim.BatchFaults{SlowFinalize: time.Hour}); err != nil {
		t.Fatal(err)
	}
	slow := tb.submit(t, build(t, []request{{"s", []string{"slow"}}}))
	b := tb.get(t, failed.ID, time.Minute)
	if b.Status != batchapi.StatusFailed || b.Errors.Data[0].Code != "server_error" {
		t.Fatalf("batch with a failure drawn: %s %+v", b.Status, b.Errors)
	}
	if b := tb.get(t, slow.ID, 10*time.Minute+30*time.Minute); b.Status != batchapi.StatusFinalizing {
		t.Fatalf("slow batch half an hour into finalizing: %s", b.Status)
	}
	if b := tb.get(t, slow.ID, 31*time.Minute); b.Status != batchapi.StatusCompleted {
		t.Fatalf("slow batch after its finalizing: %s", b.Status)
	}
}

func TestListBatchesPages(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{})
	var ids []string
	for i := range 5 {
		ids = append(ids, tb.submit(t, build(t, []request{{"x", []string{fmt.Sprint(i)}}})).ID)
	}
	slices.Reverse(ids) // newest first
	var got []string
	after := ""
	for range 10 {
		page, err := tb.client.ListBatches(tb.ctx, batchapi.ListParams{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Data {
			got = append(got, b.ID)
		}
		if !page.HasMore {
			break
		}
		after = page.LastID
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("pages list %v, want %v", got, ids)
	}
}
