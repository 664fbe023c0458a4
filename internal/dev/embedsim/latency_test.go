package embedsim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestParseLatency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Latency
		wantErr bool
	}{
		{in: "", want: Latency{}},
		{in: "none", want: Latency{}},
		{in: "fixed:5ms", want: Latency{Dist: LatencyFixed, Value: 5 * time.Millisecond}},
		{in: "uniform:1ms-20ms", want: Latency{Dist: LatencyUniform, Min: time.Millisecond, Max: 20 * time.Millisecond}},
		{in: "lognormal:10ms,200ms", want: Latency{Dist: LatencyLogNormal, Median: 10 * time.Millisecond, P99: 200 * time.Millisecond}},
		{in: "fixed", wantErr: true},
		{in: "gaussian:1ms", wantErr: true},
		{in: "uniform:20ms-1ms", wantErr: true},
		{in: "lognormal:10ms", wantErr: true},
		{in: "lognormal:200ms,10ms", wantErr: true},
		{in: "fixed:-1s", wantErr: true},
	} {
		got, err := ParseLatency(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseLatency(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("ParseLatency(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if err == nil && tc.in != "" {
			if again, _ := ParseLatency(got.String()); again != got {
				t.Errorf("String() of %q does not round-trip: %q", tc.in, got.String())
			}
		}
	}
}

func TestLatencySample(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	u := Latency{Dist: LatencyUniform, Min: time.Millisecond, Max: 3 * time.Millisecond}
	for range 1000 {
		if d := u.sample(rng); d < u.Min || d > u.Max {
			t.Fatalf("uniform sample %v outside [%v, %v]", d, u.Min, u.Max)
		}
	}
	ln := Latency{Dist: LatencyLogNormal, Median: 10 * time.Millisecond, P99: 200 * time.Millisecond}
	samples := make([]time.Duration, 20000)
	for i := range samples {
		samples[i] = ln.sample(rng)
	}
	slices.Sort(samples)
	if med := samples[len(samples)/2]; med < 8*time.Millisecond || med > 12*time.Millisecond {
		t.Errorf("log-normal median %v, want about 10ms", med)
	}
	if p99 := samples[len(samples)*99/100]; p99 < 150*time.Millisecond || p99 > 260*time.Millisecond {
		t.Errorf("log-normal p99 %v, want about 200ms", p99)
	}
}
