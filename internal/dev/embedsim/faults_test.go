package embedsim

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	t.Parallel()
	data := `{
	  "sequences": [{"match": "flaky", "sequence": "503,503,200"}, {"match": "^slow-", "regex": true, "sequence": "hang,200"}],
	  "poison": [{"match": "POISON", "kind": "invalid_input"}, {"match": "nan-", "kind": "nan"}],
	  "rate_429": 0.01, "rate_5xx": 0.02, "rate_hang": 0.001, "rate_reset": 0.002,
	  "retry_after_seconds": 3, "hang_for": "2s",
	  "outage": {"start": "10s", "duration": "20s"},
	  "max_input_chars": 8000,
	  "latency": "uniform:1ms-5ms"
	}`
	path := filepath.Join(t.TempDir(), "faults.json")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFaults(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Faults{
		Sequences: []SequenceRule{
			{Match: "flaky", Sequence: "503,503,200"},
			{Match: "^slow-", Regex: true, Sequence: "hang,200"},
		},
		Poison: []PoisonRule{
			{Match: "POISON", Kind: PoisonInvalidInput},
			{Match: "nan-", Kind: PoisonNaN},
		},
		Rate429: 0.01, Rate5xx: 0.02, RateHang: 0.001, RateReset: 0.002,
		RetryAfterSeconds: 3, HangFor: 2 * time.Second,
		OutageStart: 10 * time.Second, OutageDuration: 20 * time.Second,
		MaxInputChars: 8000,
		Latency:       Latency{Dist: LatencyUniform, Min: time.Millisecond, Max: 5 * time.Millisecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadFaults =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseFaultsRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ json, wantErr string }{
		{`{"rate_492": 0.1}`, "unknown field"},
		{`{"rate_429": 1.5}`, "rate_429"},
		{`{"sequences": [{"match": "x", "sequence": "503,abc"}]}`, "abc"},
		{`{"sequences": [{"match": "", "sequence": "503"}]}`, "empty"},
		{`{"poison": [{"match": "(", "regex": true, "kind": "nan"}]}`, "poison 0"},
		{`{"poison": [{"match": "x", "kind": "explode"}]}`, "explode"},
		{`{"outage": {"start": "soon"}}`, "outage.start"},
		{`{"latency": "fixed"}`, "latency"},
	} {
		_, err := ParseFaults([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseFaults(%s) error = %v, want one mentioning %q", tc.json, err, tc.wantErr)
		}
	}
}
