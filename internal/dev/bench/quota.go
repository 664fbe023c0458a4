package bench

import "fmt"

// ScenarioQuota is the pipeline with quotaConsumers consumer processes
// sharing one fleet budget equal to the organisation quota embed-sim
// enforces: it reports the fleet's accepted requests over the quota and
// its share of 429s.
const ScenarioQuota = "quota"

// The quota run's settings. The quota binds well below what the
// pipeline sustains on two cores (quotaRPM / 60 × quotaInputs = 400
// chunks/s), so the run measures the fleet's pacing, not the CPU.
// embed-sim's quota starts with a minute's worth in hand, so a fleet
// that did not share its budget would show above 1, not 429s, in a run
// this short.
const (
	quotaRPM       = 3000
	quotaTPM       = 10_000_000
	quotaConsumers = 4
	quotaInputs    = 8
	// quotaSeconds is how long the run's corpus lasts at the quota, 8 s in
	// quick mode.
	quotaSeconds, quotaQuickSeconds = 45, 8
)

// Names of the quota run's ratios.
const (
	// RatioQuotaThroughput is the fleet's accepted requests a second over
	// the quota's.
	RatioQuotaThroughput = "fleet budget: accepted requests / quota"
	// RatioQuota429 is the share of the fleet's requests refused 429.
	RatioQuota429 = "fleet budget: requests refused 429 / requests"
)

// quotaChunks is the quota run's corpus: quotaSeconds at the quota.
func quotaChunks(quick bool) int {
	seconds := quotaSeconds
	if quick {
		seconds = quotaQuickSeconds
	}
	return seconds * quotaRPM / 60 * quotaInputs
}

// quotaScenario is the quota run's pipeline.
func quotaScenario(quick bool) (string, pipelineSpec) {
	desc := fmt.Sprintf("384 dims, %d consumer processes sharing one budget of %d requests and %d tokens a minute, embed-sim's quota the same",
		quotaConsumers, quotaRPM, quotaTPM)
	return desc, pipelineSpec{dims: 384, chunks: quotaChunks(quick), consumers: quotaConsumers,
		faults: simFaults{quotaRPM: quotaRPM, quotaTPM: quotaTPM},
		consumerEnv: []string{fmt.Sprintf("RATE_REQUESTS_PER_MINUTE=%d", quotaRPM), fmt.Sprintf("RATE_TOKENS_PER_MINUTE=%d", quotaTPM),
			fmt.Sprintf("EMBED_MAX_INPUTS=%d", quotaInputs), fmt.Sprintf("BATCH_SIZE=%d", quotaInputs)}}
}

// quotaRatios are the quota run's two figures, from its median
// repetition; nothing when it did not run.
func quotaRatios(r *Report) []Ratio {
	run := r.Run(ScenarioQuota)
	if run == nil || run.Median.ChunksPerSec <= 0 || run.Median.EmbedRequests <= 0 {
		return nil
	}
	m := run.Median
	seconds := float64(run.Chunks) / m.ChunksPerSec
	accepted := float64(m.EmbedRequests-m.Embed429) / seconds / (quotaRPM / 60.0)
	refused := float64(m.Embed429) / float64(m.EmbedRequests)
	okThroughput, ok429 := accepted >= 0.9 && accepted <= 1.05, refused < 0.01
	return []Ratio{
		{Name: RatioQuotaThroughput, Value: accepted, Target: "0.9 to 1.05", Met: &okThroughput},
		{Name: RatioQuota429, Value: refused, Target: "< 0.01", Met: &ok429},
	}
}
