package embedder_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/embedder/embeddertest"
)

func newOpenAI(t *testing.T, cfg embedder.Config) *embedder.OpenAI {
	t.Helper()
	c, err := embedder.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformanceOpenAIBase64(t *testing.T) {
	t.Parallel()
	embeddertest.Run(t, func(t *testing.T, dims int) embedder.Embedder {
		sim := embedsim.StartTest(t, embedsim.Config{})
		return newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m", Dims: dims, Encoding: embedder.EncodingBase64})
	})
}

func TestConformanceOpenAIFloat(t *testing.T) {
	t.Parallel()
	embeddertest.Run(t, func(t *testing.T, dims int) embedder.Embedder {
		sim := embedsim.StartTest(t, embedsim.Config{})
		return newOpenAI(t, embedder.Config{URL: sim.URL() + "/v1/", Model: "m", Dims: dims, Encoding: embedder.EncodingFloat})
	})
}

func TestConformanceOpenAIAutoOnFloatOnlyServer(t *testing.T) {
	t.Parallel()
	embeddertest.Run(t, func(t *testing.T, dims int) embedder.Embedder {
		sim := embedsim.StartTest(t, embedsim.Config{DisableBase64: true})
		return newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m", Dims: dims, Encoding: embedder.EncodingAuto})
	})
}

func TestConformanceResilient(t *testing.T) {
	t.Parallel()
	embeddertest.Run(t, func(t *testing.T, dims int) embedder.Embedder {
		sim := embedsim.StartTest(t, embedsim.Config{})
		r, err := embedder.NewResilient(newOpenAI(t, embedder.Config{URL: sim.URL(), Model: "m", Dims: dims}), embedder.ResilientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
}
