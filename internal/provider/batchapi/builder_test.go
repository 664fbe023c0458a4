package batchapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

func TestBuilderLimits(t *testing.T) {
	t.Parallel()
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	cases := []struct {
		name   string
		limits batchapi.Limits
		// fill is added first, and must fit; then next must fail with want.
		fill []request
		next request
		want error
	}{
		{"requests", batchapi.Limits{MaxRequests: 2}, []request{{"a", []string{"x"}}, {"b", []string{"y"}}}, request{"c", []string{"z"}}, batchapi.ErrFileFull},
		{"inputs", batchapi.Limits{MaxInputs: 3}, []request{{"a", []string{"x", "y"}}}, request{"b", []string{"z", "w"}}, batchapi.ErrFileFull},
		{"tokens", batchapi.Limits{MaxTokens: 15}, []request{{"a", []string{words(10)}}}, request{"b", []string{words(6)}}, batchapi.ErrFileFull},
		{"bytes", batchapi.Limits{MaxBytes: 300}, []request{{"a", []string{words(20)}}}, request{"b", []string{words(20)}}, batchapi.ErrFileFull},
		{"duplicate", batchapi.Limits{}, []request{{"a", []string{"x"}}}, request{"a", []string{"y"}}, batchapi.ErrDuplicateCustomID},
		{"inputs per request", batchapi.Limits{MaxInputsPerRequest: 2}, nil, request{"a", []string{"x", "y", "z"}}, batchapi.ErrRequestTooLarge},
		{"tokens per request", batchapi.Limits{MaxRequestTokens: 5}, nil, request{"a", []string{words(6)}}, batchapi.ErrRequestTooLarge},
		{"tokens alone", batchapi.Limits{MaxTokens: 5}, nil, request{"a", []string{words(6)}}, batchapi.ErrRequestTooLarge},
		{"bytes alone", batchapi.Limits{MaxBytes: 100}, nil, request{"a", []string{words(30)}}, batchapi.ErrRequestTooLarge},
		{"inputs alone", batchapi.Limits{MaxInputs: 2}, nil, request{"a", []string{"x", "y", "z"}}, batchapi.ErrRequestTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			b, err := batchapi.NewBuilder(&buf, batchapi.BuilderConfig{Model: testModel, Limits: c.limits})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range c.fill {
				if err := b.Add(r.id, r.inputs); err != nil {
					t.Fatalf("fill %s: %v", r.id, err)
				}
			}
			before := buf.Len()
			if err := b.Add(c.next.id, c.next.inputs); !errors.Is(err, c.want) {
				t.Fatalf("add: %v, want %v", err, c.want)
			}
			if buf.Len() != before || b.Bytes() != int64(before) || b.Requests() != len(c.fill) {
				t.Errorf("a refused request changed the file: %d bytes, then %d", before, buf.Len())
			}
		})
	}
}

// TestBuilderNeverExceedsLimits fills files with random requests under
// random limits, and checks every file by reading it back.
func TestBuilderNeverExceedsLimits(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(33, 3))
	counter, _ := tokens.ForModel(testModel)
	vocabulary := strings.Fields("sluice river vectors chunk embedding batch ledger quota ünïcödé 漢字 the a of")
	text := func() string {
		n := 1 + rng.IntN(40)
		w := make([]string, n)
		for i := range w {
			w[i] = vocabulary[rng.IntN(len(vocabulary))]
		}
		return strings.Join(w, " ")
	}
	for trial := range 60 {
		limits := batchapi.Limits{
			MaxRequests: 1 + rng.IntN(30), MaxInputs: 1 + rng.IntN(60),
			MaxBytes: int64(400 + rng.IntN(8000)), MaxTokens: 50 + rng.IntN(1500),
			MaxInputsPerRequest: 1 + rng.IntN(6), MaxRequestTokens: 30 + rng.IntN(300),
		}
		var buf bytes.Buffer
		b, err := batchapi.NewBuilder(&buf, batchapi.BuilderConfig{Model: testModel, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		added := 0
		for i := 0; ; i++ {
			inputs := make([]string, 1+rng.IntN(8))
			for j := range inputs {
				inputs[j] = text()
			}
			err := b.Add(fmt.Sprintf("t%d-r%d", trial, i), inputs)
			if errors.Is(err, batchapi.ErrRequestTooLarge) {
				continue
			}
			if errors.Is(err, batchapi.ErrFileFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			added++
		}
		reqs, ins, toks := readRequestFile(t, buf.Bytes(), counter)
		if reqs != added || reqs != b.Requests() || ins != b.Inputs() || toks != b.Tokens() || int64(buf.Len()) != b.Bytes() {
			t.Fatalf("trial %d: file holds %d requests, %d inputs, %d tokens, %d bytes; builder says %d, %d, %d, %d",
				trial, reqs, ins, toks, buf.Len(), b.Requests(), b.Inputs(), b.Tokens(), b.Bytes())
		}
		if reqs > limits.MaxRequests || ins > limits.MaxInputs || toks > limits.MaxTokens || int64(buf.Len()) > limits.MaxBytes {
			t.Fatalf("trial %d: file of %d requests, %d inputs, %d tokens, %d bytes exceeds %+v", trial, reqs, ins, toks, buf.Len(), limits)
		}
	}
}

// readRequestFile checks every line of a request file and counts what it
// holds.
func readRequestFile(t *testing.T, file []byte, counter tokens.Counter) (requests, inputs, toks int) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(nil, 1<<20)
	ids := make(map[string]bool)
	for sc.Scan() {
		var line struct {
			CustomID string `json:"custom_id"`
			Method   string `json:"method"`
			URL      string `json:"url"`
			Body     struct {
				Model string   `json:"model"`
				Input []string `json:"input"`
			} `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", requests+1, err)
		}
		if ids[line.CustomID] || line.Method != "POST" || line.URL != batchapi.EndpointEmbeddings || line.Body.Model != testModel {
			t.Fatalf("line %d is not a unique embeddings request: %s", requests+1, sc.Bytes())
		}
		ids[line.CustomID] = true
		requests++
		inputs += len(line.Body.Input)
		toks += tokens.Sum(counter, line.Body.Input)
	}
	return requests, inputs, toks
}
