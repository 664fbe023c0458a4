package embedsim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/simtype"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

type testReply struct {
	status int
	header http.Header
	body   []byte
}

// post sends an embeddings request; req is marshalled as JSON.
func post(t *testing.T, ctx context.Context, url string, req any) (testReply, error) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return testReply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return testReply{}, err
	}
	return testReply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func mustPost(t *testing.T, url string, req any) testReply {
	t.Helper()
	r, err := post(t, context.Background(), url, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func embedReq(inputs ...string) map[string]any {
	return map[string]any{"model": "m", "input": inputs}
}

type wireReply struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// vectors decodes a 200 reply, float or base64, in index order.
func vectors(t *testing.T, r testReply) [][]float32 {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var w wireReply
	if err := json.Unmarshal(r.body, &w); err != nil {
		t.Fatalf("decode reply: %v: %s", err, r.body)
	}
	out := make([][]float32, len(w.Data))
	for _, d := range w.Data {
		var v []float32
		if d.Embedding[0] == '"' {
			var s string
			if err := json.Unmarshal(d.Embedding, &s); err != nil {
				t.Fatal(err)
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+4 <= len(raw); i += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
			}
		} else if err := json.Unmarshal(d.Embedding, &v); err != nil {
			t.Fatal(err)
		}
		out[d.Index] = v
	}
	return out
}

func apiErr(t *testing.T, r testReply) wireError {
	t.Helper()
	var e wireError
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("decode error body: %v: %s", err, r.body)
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestEmbeddingsWireFormat(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Dims: 16})
	inputs := []string{"alpha beta", "gamma", "alpha beta"}

	floats := mustPost(t, s.URL(), map[string]any{"model": "text-embedding-3-small", "input": inputs})
	var w wireReply
	if err := json.Unmarshal(floats.body, &w); err != nil {
		t.Fatal(err)
	}
	if w.Object != "list" || w.Model != "text-embedding-3-small" || len(w.Data) != 3 || w.Data[1].Object != "embedding" || w.Usage.TotalTokens == 0 {
		t.Errorf("reply does not look like the provider's: %s", floats.body)
	}
	fv := vectors(t, floats)

	b64 := mustPost(t, s.URL(), map[string]any{"model": "m", "input": inputs, "encoding_format": "base64"})
	bv := vectors(t, b64)
	for i := range inputs {
		want := embed(inputs[i], 16)
		if len(fv[i]) != 16 || len(bv[i]) != 16 {
			t.Fatalf("input %d: dims %d (float), %d (base64), want 16", i, len(fv[i]), len(bv[i]))
		}
		for j := range want {
			if fv[i][j] != want[j] || bv[i][j] != want[j] {
				t.Fatalf("input %d: float/base64 replies differ from EmbedInto at %d", i, j)
			}
		}
	}

	dimmed := vectors(t, mustPost(t, s.URL(), map[string]any{"model": "m", "input": "one string", "dimensions": 7}))
	if len(dimmed) != 1 || len(dimmed[0]) != 7 {
		t.Errorf("dimensions=7 with a string input: got %d vectors of %d", len(dimmed), len(dimmed[0]))
	}
}

func TestEmbeddingsRejectsBadRequests(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{DisableBase64: true, RefuseDims: true})
	for _, tc := range []struct {
		name      string
		req       any
		wantParam string
	}{
		{"no model", map[string]any{"input": []string{"x"}}, "model"},
		{"no input", map[string]any{"model": "m"}, "input"},
		{"empty array", map[string]any{"model": "m", "input": []string{}}, "input"},
		{"token arrays", map[string]any{"model": "m", "input": [][]int{{1, 2}}}, "input"},
		{"bad encoding", map[string]any{"model": "m", "input": "x", "encoding_format": "hex"}, "encoding_format"},
		{"base64 disabled", map[string]any{"model": "m", "input": "x", "encoding_format": "base64"}, "encoding_format"},
		{"negative dims", map[string]any{"model": "m", "input": "x", "dimensions": -1}, "dimensions"},
		{"dims refused", map[string]any{"model": "m", "input": "x", "dimensions": 384}, "dimensions"},
	} {
		r := mustPost(t, s.URL(), tc.req)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", tc.name, r.status)
			continue
		}
		if e := apiErr(t, r); e.Error.Type != "invalid_request_error" || deref(e.Error.Param) != tc.wantParam {
			t.Errorf("%s: error %+v, want invalid_request_error with param %q", tc.name, e.Error, tc.wantParam)
		}
	}
}

// A body over MaxRequestBytes is refused with 413 and a message naming the
// limit; the next request is served normally.
func TestRequestBodyLimit(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{MaxRequestBytes: 1024})
	r := mustPost(t, s.URL(), embedReq(strings.Repeat("x", 2048)))
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", r.status)
	}
	if e := apiErr(t, r); !strings.Contains(e.Error.Message, "limit of 1024 bytes") || !strings.Contains(e.Error.Message, "MaxRequestBytes") {
		t.Errorf("message %q does not name the limit and MaxRequestBytes", e.Error.Message)
	}
	if r := mustPost(t, s.URL(), embedReq("fits")); r.status != http.StatusOK {
		t.Errorf("a request under the limit: status %d", r.status)
	}
}

func TestAPIKeyRequired(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{APIKey: "sekret"})
	if r := mustPost(t, s.URL(), embedReq("x")); r.status != http.StatusUnauthorized {
		t.Errorf("without key: status %d, want 401", r.status)
	}
	body, _ := json.Marshal(embedReq("x"))
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/embeddings", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer sekret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("with key: status %d, want 200", resp.StatusCode)
	}
}

func TestSequencesArePerInput(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{
		Sequences: []SequenceRule{{Match: "flaky", Sequence: "503,429,200"}},
	}})
	statuses := func(inputs ...string) int { return mustPost(t, s.URL(), embedReq(inputs...)).status }

	if got := statuses("steady"); got != 200 {
		t.Fatalf("unmatched input: %d, want 200", got)
	}
	// flaky-1 walks 503, 429, 200, 200...; flaky-2 starts its own walk.
	want := []struct {
		inputs []string
		status int
	}{
		{[]string{"flaky-1", "steady"}, 503},
		{[]string{"flaky-1"}, 429},
		{[]string{"flaky-2", "flaky-1"}, 503}, // flaky-1 is at 200 now, flaky-2 fails the batch
		{[]string{"flaky-1", "flaky-1"}, 200},
		{[]string{"flaky-2"}, 429},
		{[]string{"flaky-2"}, 200},
		{[]string{"flaky-2"}, 200},
	}
	for i, w := range want {
		if got := statuses(w.inputs...); got != w.status {
			t.Errorf("step %d %v: status %d, want %d", i, w.inputs, got, w.status)
		}
	}
	r := mustPost(t, s.URL(), embedReq("flaky-3"))
	if e := apiErr(t, r); r.status != 503 || e.Error.Type != "server_error" {
		t.Errorf("503 body: %d %+v, want server_error", r.status, e.Error)
	}
	if r := mustPost(t, s.URL(), embedReq("flaky-3")); r.status != 429 || r.header.Get("Retry-After") != "1" {
		t.Errorf("429: status %d Retry-After %q, want 429 with Retry-After 1", r.status, r.header.Get("Retry-After"))
	}
}

func TestRandomFaultsAreSeeded(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) []int {
		s := StartTest(t, Config{Seed: seed, Faults: Faults{Rate429: 0.3, Rate5xx: 0.3}})
		var got []int
		for range 40 {
			got = append(got, mustPost(t, s.URL(), embedReq("x")).status)
		}
		return got
	}
	a, b := run(7), run(7)
	counts := map[int]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different faults: %v vs %v", a, b)
		}
		counts[a[i]]++
	}
	if counts[200] == 0 || counts[429] == 0 || counts[500]+counts[502]+counts[503] == 0 {
		t.Errorf("rates 0.3/0.3 over 40 requests gave %v; want a mix of 200, 429 and 5xx", counts)
	}
}

func TestRate429SendsRetryAfter(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{Rate429: 1, RetryAfterSeconds: 7}})
	r := mustPost(t, s.URL(), embedReq("x"))
	if e := apiErr(t, r); r.status != 429 || r.header.Get("Retry-After") != "7" || e.Error.Type != "rate_limit_error" || deref(e.Error.Code) != "rate_limit_exceeded" {
		t.Errorf("got %d Retry-After=%q %+v", r.status, r.header.Get("Retry-After"), e.Error)
	}
}

func TestRate5xx(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{Rate5xx: 1}})
	for range 10 {
		if r := mustPost(t, s.URL(), embedReq("x")); r.status != 500 && r.status != 502 && r.status != 503 {
			t.Fatalf("status %d, want 500, 502 or 503", r.status)
		}
	}
}

func TestHangUntilClientLeaves(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{RateHang: 1, HangFor: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := post(t, ctx, s.URL(), embedReq("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the client's deadline", err)
	}
	// The server notices the client leaving and records an unanswered hang.
	testenv.Eventually(t, 5*time.Second, "an unanswered hang to be counted", func() bool {
		c := s.Counts()
		return c.ByStatus["0"] == 1 && c.ByFault["hang"] == 1
	})
}

func TestHangThenAnswer(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{RateHang: 1, HangFor: 50 * time.Millisecond}})
	start := time.Now()
	if r := mustPost(t, s.URL(), embedReq("x")); r.status != 200 {
		t.Fatalf("status %d, want 200 after the hang", r.status)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("answered after %v, want >= 50ms", d)
	}
}

func TestConnectionReset(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{Sequences: []SequenceRule{{Match: "drop", Sequence: "reset,200"}}}})
	if _, err := post(t, context.Background(), s.URL(), embedReq("drop me")); err == nil {
		t.Fatal("got a reply, want a transport error")
	}
	if r := mustPost(t, s.URL(), embedReq("drop me")); r.status != 200 {
		t.Errorf("second try: %d, want 200", r.status)
	}
	// The reset is counted once the server has closed the connection,
	// which the client may see first.
	testenv.Eventually(t, 5*time.Second, "the reset to be counted", func() bool {
		c := s.Counts()
		return c.ByFault["sequence"] == 1 && c.ByStatus["0"] == 1
	})
}

func TestRateReset(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{RateReset: 1}})
	if _, err := post(t, context.Background(), s.URL(), embedReq("x")); err == nil {
		t.Fatal("got a reply, want a transport error")
	}
}

func TestOutageWindowFromConfig(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartTest(t, Config{Faults: Faults{OutageStart: time.Minute, OutageDuration: time.Minute}}, WithClock(clock.Now))
	status := func() int { return mustPost(t, s.URL(), embedReq("x")).status }
	if got := status(); got != 200 {
		t.Errorf("before the outage: %d", got)
	}
	clock.Advance(time.Minute)
	if got := status(); got != 503 {
		t.Errorf("in the outage: %d, want 503", got)
	}
	clock.Advance(time.Minute)
	if got := status(); got != 200 {
		t.Errorf("after the outage: %d", got)
	}
}

func TestSetOutage(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{})
	now := time.Now()
	s.SetOutage(now.Add(-time.Second), now.Add(time.Hour))
	if r := mustPost(t, s.URL(), embedReq("x")); r.status != 503 {
		t.Errorf("in SetOutage window: %d, want 503", r.status)
	}
	s.SetOutage(time.Time{}, time.Time{})
	if r := mustPost(t, s.URL(), embedReq("x")); r.status != 200 {
		t.Errorf("after clearing: %d, want 200", r.status)
	}
	if c := s.Counts(); c.ByFault["outage"] != 1 {
		t.Errorf("counts %+v, want one outage", c)
	}
}

func TestPoison(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Dims: 8, Faults: Faults{
		MaxInputChars: 40,
		Poison: []PoisonRule{
			{Match: "POISON", Kind: PoisonInvalidInput},
			{Match: `^too-long-\d+$`, Regex: true, Kind: PoisonContextLength},
			{Match: "wrongdim", Kind: PoisonWrongDims},
			{Match: "nan", Kind: PoisonNaN},
		},
	}})

	r := mustPost(t, s.URL(), embedReq("fine", "a POISON pill"))
	if e := apiErr(t, r); r.status != 400 || deref(e.Error.Code) != "invalid_input" || e.Error.Type != "invalid_request_error" {
		t.Errorf("poison: %d %+v", r.status, e.Error)
	}
	for _, in := range []string{strings.Repeat("x", 41), "too-long-7"} {
		r = mustPost(t, s.URL(), embedReq(in))
		e := apiErr(t, r)
		if r.status != 400 || deref(e.Error.Code) != "context_length_exceeded" || !strings.HasPrefix(e.Error.Message, "This model's maximum context length is 10 tokens") {
			t.Errorf("%q: %d %+v", in, r.status, e.Error)
		}
	}
	if r := mustPost(t, s.URL(), embedReq(strings.Repeat("é", 40))); r.status != 200 {
		t.Errorf("40 two-byte characters: %d, want 200 (the limit counts characters)", r.status)
	}

	v := vectors(t, mustPost(t, s.URL(), embedReq("fine", "wrongdim here")))
	if len(v[0]) != 8 || len(v[1]) == 8 {
		t.Errorf("wrong_dims: lengths %d, %d; want 8 and something else", len(v[0]), len(v[1]))
	}
	b64 := vectors(t, mustPost(t, s.URL(), map[string]any{"model": "m", "input": []string{"fine", "nan here"}, "encoding_format": "base64"}))
	if !math.IsNaN(float64(b64[1][0])) || math.IsNaN(float64(b64[0][0])) {
		t.Errorf("nan poison (base64): %v / %v", b64[0][:2], b64[1][:2])
	}
	fl := mustPost(t, s.URL(), embedReq("nan here"))
	if fl.status != 200 || !bytes.Contains(fl.body, []byte("[NaN,")) {
		t.Errorf("nan poison (float): want a bare NaN literal, got %s", fl.body)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{Faults: Faults{Latency: Latency{Dist: LatencyFixed, Value: 40 * time.Millisecond}}})
	start := time.Now()
	mustPost(t, s.URL(), embedReq("x"))
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("answered in %v, want >= 40ms", d)
	}
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	var jsonl testenv.Buffer
	s, err := New(Config{MaxRecords: 2, Faults: Faults{Sequences: []SequenceRule{{Match: "b", Sequence: "503,200"}}}}, WithRequestLog(&jsonl))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	mustPost(t, s.URL(), embedReq("a"))
	mustPost(t, s.URL(), embedReq("a", "b"))
	mustPost(t, s.URL(), embedReq("b", "c"))

	if !s.Seen("a") || !s.Seen("c") || s.Seen("d") || s.SeenCount("b") != 2 {
		t.Errorf("Seen/SeenCount wrong: a=%v c=%v d=%v b=%d", s.Seen("a"), s.Seen("c"), s.Seen("d"), s.SeenCount("b"))
	}
	recs := s.Requests()
	if len(recs) != 2 {
		t.Fatalf("Requests() kept %d, want MaxRecords=2", len(recs))
	}
	if recs[0].Inputs != 2 || recs[0].Status != 503 || recs[0].Fault != "sequence" || recs[1].Status != 200 {
		t.Errorf("records %+v", recs)
	}
	if recs[0].Texts != nil {
		t.Errorf("texts recorded without RecordInputs: %v", recs[0].Texts)
	}
	if recs[1].InputSHA256[1] != "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6" {
		t.Errorf("digest of %q = %s", "c", recs[1].InputSHA256[1])
	}
	c := s.Counts()
	if c.Requests != 3 || c.Inputs != 5 || c.DistinctInputs != 3 || c.RepeatedInputs != 2 || c.ByStatus["503"] != 1 {
		t.Errorf("counts %+v", c)
	}

	var lines []simtype.RequestRecord
	for line := range strings.SplitSeq(strings.TrimSpace(jsonl.String()), "\n") {
		var r simtype.RequestRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad JSONL line %q: %v", line, err)
		}
		lines = append(lines, r)
	}
	if len(lines) != 3 || lines[1].Status != 503 || len(lines[2].InputSHA256) != 2 {
		t.Errorf("JSONL log: %+v", lines)
	}

	resp, err := http.Get(s.URL() + "/debug/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var served RequestCounts
	if err := json.NewDecoder(resp.Body).Decode(&served); err != nil {
		t.Fatal(err)
	}
	if served.Requests != 3 || served.RepeatedInputs != 2 {
		t.Errorf("/debug/requests = %+v", served)
	}
}

func TestStartTestRecordsTexts(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{})
	mustPost(t, s.URL(), embedReq("hello", "world"))
	if recs := s.Requests(); len(recs) != 1 || strings.Join(recs[0].Texts, ",") != "hello,world" {
		t.Errorf("records %+v", recs)
	}
}

func TestMetricsAndModels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := StartTest(t, Config{Model: "sim-x", Faults: Faults{Sequences: []SequenceRule{{Match: "f", Sequence: "502,200"}}}}, WithRegistry(reg))
	mustPost(t, s.URL(), embedReq("f", "g"))
	mustPost(t, s.URL(), embedReq("f"))

	get := func(path string) string {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := get("/metrics")
	for _, want := range []string{
		`sluice_embedsim_requests_total{code="200"} 1`,
		`sluice_embedsim_requests_total{code="502"} 1`,
		`sluice_embedsim_inputs_total 3`,
		`sluice_embedsim_faults_total{kind="sequence"} 1`,
		`sluice_embedsim_request_duration_seconds_count 2`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if models := get("/v1/models"); !strings.Contains(models, `"id":"sim-x"`) {
		t.Errorf("/v1/models = %s", models)
	}
}

func TestSetFaultsRestartsSequences(t *testing.T) {
	t.Parallel()
	s := StartTest(t, Config{})
	if err := s.SetFaults(Faults{Rate429: 2}); err == nil {
		t.Error("SetFaults accepted a rate of 2")
	}
	f := Faults{Sequences: []SequenceRule{{Match: "x", Sequence: "500,200"}}}
	for range 2 {
		if err := s.SetFaults(f); err != nil {
			t.Fatal(err)
		}
		if r := mustPost(t, s.URL(), embedReq("x")); r.status != 500 {
			t.Errorf("first request after SetFaults: %d, want 500", r.status)
		}
	}
}

func TestCloseCutsHangsShort(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Faults: Faults{RateHang: 1, HangFor: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := post(t, context.Background(), s.URL(), embedReq("x"))
		errc <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the request to arrive", func() bool { return s.Counts().Requests == 1 })
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a hanging request", d)
	}
	<-errc
}
