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
	"github.com/sluicehq/sluice/pkg/classify"
)

func phases() embedsim.BatchConfig {
	return embedsim.BatchConfig{Validating: time.Minute, InProgress: 10 * time.Minute, Finalizing: time.Minute, Cancelling: time.Minute}
}

func TestBatchLifecycle(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{Batch: phases()})
	reqs := []request{
		{"doc-1:0", []string{"the river runs to the sea"}},
		{"doc-1:1", []string{"a sluice holds the water", "and lets it go"}},
		{"doc-2:0", []string{"vectors for every chunk"}},
	}
	created := tb.submit(t, build(t, reqs))
	if got, want := created.ExpiresAt-created.CreatedAt, int64(24*3600); got != want {
		t.Errorf("expires %d s after creation, want %d", got, want)
	}
	if created.Metadata["run"] != "test" || created.Endpoint != batchapi.EndpointEmbeddings || created.CompletionWindow != "24h" {
		t.Errorf("created batch = %+v", created)
	}

	steps := []struct {
		after     time.Duration
		status    batchapi.Status
		completed int
	}{
		{59 * time.Second, batchapi.StatusValidating, 0},
		{time.Second, batchapi.StatusInProgress, 0},
		{5 * time.Minute, batchapi.StatusInProgress, 1},
		{5 * time.Minute, batchapi.StatusFinalizing, 3},
		{time.Minute, batchapi.StatusCompleted, 3},
	}
	var b *batchapi.Batch
	for i, s := range steps {
		b = tb.get(t, created.ID, s.after)
		if b.Status != s.status || b.RequestCounts.Completed != s.completed {
			t.Fatalf("step %d: %s with %d completed, want %s with %d", i, b.Status, b.RequestCounts.Completed, s.status, s.completed)
		}
	}
	if b.InProgressAt != b.CreatedAt+60 || b.FinalizingAt != b.InProgressAt+600 || b.CompletedAt != b.FinalizingAt+60 {
		t.Errorf("times: created %d, in progress %d, finalizing %d, completed %d", b.CreatedAt, b.InProgressAt, b.FinalizingAt, b.CompletedAt)
	}
	if b.RequestCounts != (batchapi.RequestCounts{Total: 3, Completed: 3}) || b.ErrorFileID != "" || b.Model != testModel {
		t.Fatalf("completed batch = %+v", b)
	}

	got := byID(t, tb.results(t, b.OutputFileID))
	live := tb.live(t)
	for _, r := range reqs {
		res, ok := got[r.id]
		if !ok || res.Err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %+v", r.id, res)
		}
		want, err := live.Embed(tb.ctx, r.inputs)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Vectors) != len(want) {
			t.Fatalf("%s: %d vectors, want %d", r.id, len(res.Vectors), len(want))
		}
		for i := range want {
			if !slices.Equal(res.Vectors[i], want[i]) {
				t.Errorf("%s: vector %d differs from the live endpoint's", r.id, i)
			}
		}
	}

	f, err := tb.client.File(tb.ctx, b.OutputFileID)
	if err != nil || f.Purpose != "batch_output" || f.Bytes == 0 {
		t.Fatalf("output file = %+v, %v", f, err)
	}
	if err := tb.client.DeleteFile(tb.ctx, b.OutputFileID); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.client.File(tb.ctx, b.OutputFileID); !errors.Is(err, batchapi.ErrNotFound) {
		t.Fatalf("deleted file: %v, want ErrNotFound", err)
	}
}

func TestInvalidFileFailsAtValidating(t *testing.T) {
	t.Parallel()
	line := func(id, method, url, model string) string {
		return fmt.Sprintf(`{"custom_id":%q,"method":%q,"url":%q,"body":{"model":%q,"input":["text"]}}`, id, method, url, model)
	}
	file := line("a", "POST", "/v1/embeddings", testModel) + "\n" +
		`{"custom_id": "b", "method": "POST",` + "\n" +
		line("a", "POST", "/v1/embeddings", testModel) + "\n" +
		line("c", "POST", "/v1/chat/completions", testModel) + "\n" +
		line("d", "POST", "/v1/embeddings", "text-embedding-3-large") + "\n" +
		line("e", "GET", "/v1/embeddings", testModel) + "\n" +
		`{"method":"POST","url":"/v1/embeddings","body":{"model":"x","input":"y"}}` + "\n" +
		line("f", "POST", "/v1/embeddings", testModel) + "\n"
	want := []batchapi.BatchError{
		{Code: "invalid_json_line", Line: 2},
		{Code: "duplicate_custom_id", Param: "custom_id", Line: 3},
		{Code: "url_mismatch", Param: "url", Line: 4},
		{Code: "model_mismatch", Param: "body.model", Line: 5},
		{Code: "invalid_value", Param: "method", Line: 6},
		{Code: "missing_required_parameter", Param: "custom_id", Line: 7},
	}
	tb := setup(t, embedsim.Config{Batch: phases()})
	created := tb.submit(t, []byte(file))
	b := tb.get(t, created.ID, time.Minute)
	if b.Status != batchapi.StatusFailed || b.FailedAt == 0 || b.InProgressAt != 0 || b.Errors == nil {
		t.Fatalf("batch = %+v, want failed at validating", b)
	}
	if len(b.Errors.Data) != len(want) {
		t.Fatalf("errors = %+v, want %d", b.Errors.Data, len(want))
	}
	for i, e := range b.Errors.Data {
		if e.Message == "" {
			t.Errorf("error %d has no message", i)
		}
		e.Message = ""
		if e != want[i] {
			t.Errorf("error %d = %+v, want %+v", i, e, want[i])
		}
	}
	// Nothing ran.
	if b.OutputFileID != "" || b.ErrorFileID != "" || b.RequestCounts.Total != 0 {
		t.Errorf("failed batch has results: %+v", b)
	}
}

func TestFileLimitsFailAtValidating(t *testing.T) {
	t.Parallel()
	three := build(t, []request{{"a", []string{"one"}}, {"b", []string{"two", "three"}}, {"c", []string{"four"}}})
	for _, c := range []struct {
		name  string
		batch embedsim.BatchConfig
		file  []byte
		code  string
	}{
		{"requests", embedsim.BatchConfig{MaxRequests: 2}, three, "too_many_tasks"},
		{"inputs", embedsim.BatchConfig{MaxInputs: 3}, three, "too_many_tasks"},
		{"bytes", embedsim.BatchConfig{MaxFileBytes: int64(len(three) - 1)}, three, "file_too_large"},
		{"empty", embedsim.BatchConfig{}, []byte("\n"), "empty_file"},
		{"within", embedsim.BatchConfig{MaxRequests: 3, MaxInputs: 4, MaxFileBytes: int64(len(three))}, three, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, embedsim.Config{Batch: c.batch})
			b := tb.get(t, tb.submit(t, c.file).ID, embedsim.DefaultBatchValidating)
			if c.code == "" {
				if b.Status != batchapi.StatusInProgress {
					t.Fatalf("batch within limits is %s: %+v", b.Status, b.Errors)
				}
				return
			}
			if b.Status != batchapi.StatusFailed || len(b.Errors.Data) != 1 || b.Errors.Data[0].Code != c.code || b.Errors.Data[0].Line != 0 {
				t.Fatalf("batch = %s %+v, want failed with %s for the whole file", b.Status, b.Errors, c.code)
			}
		})
	}
}

func TestUploadRefusesNonJSONL(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{})
	_, err := tb.client.UploadFile(tb.ctx, "requests.txt", strings.NewReader("{}\n"))
	var ae *batchapi.APIError
	if !errors.As(err, &ae) || ae.Status.StatusCode != 400 {
		t.Fatalf("upload of a .txt: %v, want a 400", err)
	}
	if d := classify.Classify(err); d.Disposition != classify.Quarantine || d.Class != classify.ClassBadRequest {
		t.Errorf("classified %+v", d)
	}
	if _, err := tb.client.CreateBatch(tb.ctx, batchapi.CreateParams{InputFileID: "file-nope"}); !errors.As(err, &ae) || ae.Status.StatusCode != 400 {
		t.Fatalf("batch over an unknown file: %v, want a 400", err)
	}
}
