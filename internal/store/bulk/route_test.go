package bulk

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
)

func TestRoute(t *testing.T) {
	t.Parallel()
	vec := [][]float32{{1, 0}}
	for _, tc := range []struct {
		name  string
		res   batchapi.Result
		want  MemberState
		class string
	}{
		{"a vector", batchapi.Result{Vectors: vec}, MemberApplied, ""},
		{"no vector", batchapi.Result{}, MemberRequeued, classify.ClassServerError},
		{"two vectors for one input", batchapi.Result{Vectors: [][]float32{{1}, {2}}}, MemberRequeued, classify.ClassServerError},
		{"400", batchapi.Result{Err: &embedder.InputError{Err: &classify.StatusError{StatusCode: 400, APICode: "invalid_input"}}}, MemberParked, classify.ClassBadRequest},
		{"context length", batchapi.Result{Err: &classify.StatusError{StatusCode: 400, APICode: "context_length_exceeded"}}, MemberParked, classify.ClassContextLength},
		{"wrong dimension", batchapi.Result{Err: &embedder.InputError{Err: classify.Permanent(classify.ClassDimensionMismatch, errors.New("3 dims"))}}, MemberParked, classify.ClassDimensionMismatch},
		{"a secret", batchapi.Result{Err: classify.EscalateRule("aws_key", errors.New("found"))}, MemberParked, ""},
		{"429", batchapi.Result{Err: &classify.StatusError{StatusCode: 429}}, MemberRequeued, classify.ClassRateLimited},
		{"500", batchapi.Result{Err: &classify.StatusError{StatusCode: 500}}, MemberRequeued, classify.ClassServerError},
		{"expired", batchapi.Result{Err: classify.Retryable(classify.ClassTimeout, &batchapi.RequestError{Code: batchapi.CodeExpired})}, MemberRequeued, classify.ClassTimeout},
		{"unknown", batchapi.Result{Err: errors.New("what")}, MemberRequeued, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, d, err := route(tc.res)
			if st != tc.want || (tc.class != "" && d.Class != tc.class) {
				t.Errorf("route = %s (%s), want %s (%s)", st, d.Class, tc.want, tc.class)
			}
			if (st == MemberApplied) != (err == nil) {
				t.Errorf("route = %s with error %v", st, err)
			}
		})
	}
}

func TestStatesFollowTheProvider(t *testing.T) {
	t.Parallel()
	for _, s := range []batchapi.Status{batchapi.StatusValidating, batchapi.StatusInProgress, batchapi.StatusFinalizing,
		batchapi.StatusCancelling, batchapi.StatusCompleted, batchapi.StatusFailed, batchapi.StatusExpired, batchapi.StatusCancelled} {
		st, ok := fromProvider(s)
		if !ok || string(st) != string(s) {
			t.Errorf("%s: %s, %v", s, st, ok)
		}
		// A final status ends the batch in the ledger; any other keeps it
		// at the provider.
		if s.Final() != ended(st) || s.Final() == atProvider(st) {
			t.Errorf("%s: ended %v, at provider %v", s, ended(st), atProvider(st))
		}
	}
	if _, ok := fromProvider("paused"); ok {
		t.Error("an unknown status was taken")
	}
	for _, s := range States {
		if ended(s) && settledAs(s) != Applied && settledAs(s) != Requeued {
			t.Errorf("%s settles as %s", s, settledAs(s))
		}
	}
}

func TestFits(t *testing.T) {
	t.Parallel()
	l := batchapi.Limits{MaxRequests: 3, MaxInputs: 3, MaxBytes: 100, MaxTokens: 10, MaxRequestTokens: 8}
	one := size{requests: 1, inputs: 1, bytes: 30, tokens: 3}
	for _, tc := range []struct {
		name string
		b    size
		want bool
	}{
		{"empty", size{}, true},
		{"room", size{2, 2, 70, 7}, true},
		{"requests", size{3, 2, 10, 1}, false},
		{"inputs", size{2, 3, 10, 1}, false},
		{"bytes", size{1, 1, 71, 1}, false},
		{"tokens", size{1, 1, 10, 8}, false},
	} {
		if got := fits(tc.b, one, l); got != tc.want {
			t.Errorf("%s: fits = %v, want %v", tc.name, got, tc.want)
		}
	}
	if err := alone(size{1, 1, 30, 9}, l); !errors.Is(err, batchapi.ErrRequestTooLarge) {
		t.Errorf("a request of 9 tokens, past 8: %v", err)
	}
	if err := alone(size{1, 1, 101, 1}, l); !errors.Is(err, batchapi.ErrRequestTooLarge) {
		t.Errorf("a request of 101 bytes, past 100: %v", err)
	}
	if err := alone(one, l); err != nil {
		t.Errorf("a request that fits: %v", err)
	}
}
