package embedsim

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
)

// call sends a request and decodes a JSON answer into a generic map.
func call(t *testing.T, method, url string, body io.Reader, contentType string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, out
}

func upload(t *testing.T, base, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write([]byte(content))
	_ = mw.Close()
	status, f := call(t, http.MethodPost, base+"/v1/files", &buf, mw.FormDataContentType())
	if status != http.StatusOK || f["object"] != "file" || f["purpose"] != "batch" || f["bytes"] != float64(len(content)) {
		t.Fatalf("upload: %d %v", status, f)
	}
	return f["id"].(string)
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestBatchWireFormat checks the shapes clients parse: the batch object
// with every field present, and the lines of output and error files.
func TestBatchWireFormat(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Unix(1_800_000_000, 0))
	reg := prometheus.NewRegistry()
	s := StartTest(t, Config{Dims: 4, Faults: Faults{Poison: []PoisonRule{{Match: "BAD", Kind: PoisonInvalidInput}}}},
		WithClock(clock.Now), WithRegistry(reg))
	file := `{"custom_id":"ok","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":["fine"],"encoding_format":"float"}}` + "\n" +
		`{"custom_id":"bad","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":["BAD"]}}` + "\n"
	fileID := upload(t, s.URL(), "in.jsonl", file)
	status, b := call(t, http.MethodPost, s.URL()+"/v1/batches",
		strings.NewReader(`{"input_file_id":"`+fileID+`","endpoint":"/v1/embeddings","completion_window":"24h","metadata":{"k":"v"}}`), "application/json")
	if status != http.StatusOK {
		t.Fatalf("create: %d %v", status, b)
	}
	want := []string{"cancelled_at", "cancelling_at", "completed_at", "completion_window", "created_at", "endpoint", "error_file_id",
		"errors", "expired_at", "expires_at", "failed_at", "finalizing_at", "id", "in_progress_at", "input_file_id", "metadata",
		"model", "object", "output_file_id", "request_counts", "status", "usage"}
	if got := keys(b); !slices.Equal(got, want) {
		t.Fatalf("batch fields %v, want %v", got, want)
	}
	if b["object"] != "batch" || b["status"] != "validating" || b["created_at"] != float64(1_800_000_000) ||
		b["expires_at"] != float64(1_800_000_000+86400) || b["in_progress_at"] != nil || b["errors"] != nil {
		t.Fatalf("new batch = %v", b)
	}
	id := b["id"].(string)
	clock.Advance(DefaultBatchValidating + DefaultBatchInProgress + DefaultBatchFinalizing)
	_, b = call(t, http.MethodGet, s.URL()+"/v1/batches/"+id, nil, "")
	if b["status"] != "completed" {
		t.Fatalf("batch = %v", b)
	}
	if rc := b["request_counts"].(map[string]any); rc["total"] != 2.0 || rc["completed"] != 1.0 || rc["failed"] != 1.0 {
		t.Errorf("request_counts = %v", rc)
	}

	content := func(id string) map[string]any {
		resp, err := http.Get(s.URL() + "/v1/files/" + id + "/content")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines) != 1 {
			t.Fatalf("file %s holds %d lines, want 1", id, len(lines))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
			t.Fatal(err)
		}
		if got := keys(m); !slices.Equal(got, []string{"custom_id", "error", "id", "response"}) || m["error"] != nil ||
			!strings.HasPrefix(m["id"].(string), "batch_req_") {
			t.Fatalf("line %v", m)
		}
		return m["response"].(map[string]any)
	}
	ok := content(b["output_file_id"].(string))
	if ok["status_code"] != 200.0 || ok["request_id"] == "" || ok["body"].(map[string]any)["object"] != "list" {
		t.Errorf("output line response = %v", ok)
	}
	bad := content(b["error_file_id"].(string))
	e := bad["body"].(map[string]any)["error"].(map[string]any)
	if bad["status_code"] != 400.0 || e["code"] != "invalid_input" || e["type"] != "invalid_request_error" {
		t.Errorf("error line response = %v", bad)
	}

	resp, err := http.Get(s.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`sluice_embedsim_batches{status="completed"} 1`,
		`sluice_embedsim_batches{status="validating"} 0`,
		`sluice_embedsim_batch_lines_total{outcome="completed"} 1`,
		`sluice_embedsim_batch_lines_total{outcome="failed"} 1`,
		`sluice_embedsim_batch_api_requests_total{code="200",route="batches"} 1`,
		`sluice_embedsim_batch_api_requests_total{code="200",route="files"} 1`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestBatchConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  BatchConfig
		want string
	}{
		{BatchConfig{OutputOrder: "sorted"}, "output order"},
		{BatchConfig{InProgress: -time.Second}, "in progress phase"},
		{BatchConfig{MaxRequests: -1}, "must not be negative"},
		{BatchConfig{Faults: BatchFaults{LoseRate: 2}}, "lose rate"},
		{BatchConfig{}, ""},
	} {
		err := Config{Batch: c.cfg}.Validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
