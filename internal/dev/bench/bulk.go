package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/bulk/view"
)

// ScenarioBulk is the corpus of the 384-dimension pipeline loaded with
// its source in bulk mode: every chunk job admitted to the ledger and
// embedded through embed-sim's Batch API, set against the pipeline-384
// run's live load of the same corpus, which it brings along.
const ScenarioBulk = "bulk"

// RatioBulkRequests is bulk mode's requests sent per chunk over the
// live load's, for the same corpus.
const RatioBulkRequests = "bulk / live, requests sent per chunk"

// The bulk run's settings. A provider's batches take hours and
// BULK_MAX_AGE and BULK_INTERVAL default to minutes; both are compressed
// here, so that the run measures what the pipeline itself spends on a
// batch (admitting, building, uploading, polling, applying), not how
// long the provider takes to answer.
const (
	bulkMaxAge     = 2 * time.Second
	bulkInterval   = 500 * time.Millisecond
	bulkValidating = 200 * time.Millisecond
	bulkInProgress = 2 * time.Second
	bulkFinalizing = 200 * time.Millisecond
)

// BulkRep is what one repetition of the bulk run counted beyond its
// RepResult, whose EmbedRequests are the live endpoint's.
type BulkRep struct {
	// Chunks are the corpus's chunks.
	Chunks int `json:"chunks"`
	// Admitted and Applied are the consumers'
	// sluice_bulk_members_total{outcome="admitted"} and
	// {outcome="applied"}, summed over the consumers.
	Admitted int `json:"admitted"`
	Applied  int `json:"applied"`
	// ProviderRequests is sum(sluice_bulk_provider_requests_total) over
	// the consumers: every request to the Batch and Files APIs.
	ProviderRequests int `json:"provider_requests"`
	// RequestsPerChunk is ProviderRequests over Admitted.
	RequestsPerChunk float64 `json:"requests_per_chunk"`
	// Batches are the ledger's batches, every one applied or requeued.
	Batches int `json:"batches"`
	// LiveRequests are the requests the live endpoint got during the
	// load; a bulk source's chunks go through batches alone, so 0.
	LiveRequests int `json:"live_requests"`
	// InputTokens are the input tokens of the request lines uploaded
	// (the ledger's tokens of every batch sent), one line per distinct
	// text; InputTokensPerChunk is InputTokens over Admitted: below a
	// chunk's tokens on a corpus whose texts repeat.
	InputTokens         int64   `json:"input_tokens"`
	InputTokensPerChunk float64 `json:"input_tokens_per_chunk"`
	// RequestLines are the request lines of the batches uploaded: the
	// inputs the provider is paid for, one per distinct text waiting.
	RequestLines int `json:"request_lines"`
}

// BulkStats is the bulk run's medians beside the live load's.
type BulkStats struct {
	Chunks int `json:"chunks"`
	// MaxAge, Interval, Validating, InProgress and Finalizing are the
	// run's compressed settings: BULK_MAX_AGE, BULK_INTERVAL and
	// embed-sim's batch phases.
	MaxAge     string `json:"max_age"`
	Interval   string `json:"interval"`
	Validating string `json:"validating"`
	InProgress string `json:"in_progress"`
	Finalizing string `json:"finalizing"`
	// ChunksPerSec runs from the producer's start to the last chunk
	// stored.
	ChunksPerSec float64 `json:"chunks_per_sec"`
	// ServiceCPUPer1k is the consumers' and the relay's CPU per 1,000
	// chunks, and TotalCPUPer1k every process's, producer, embed-sim,
	// PostgreSQL and NATS included.
	ServiceCPUPer1k float64 `json:"service_cpu_s_per_1k"`
	TotalCPUPer1k   float64 `json:"total_cpu_s_per_1k"`
	// ProviderRequests, Admitted and Batches are BulkRep's medians, and
	// RequestsPerChunk theirs.
	ProviderRequests float64 `json:"provider_requests"`
	Admitted         float64 `json:"admitted"`
	Batches          float64 `json:"batches"`
	RequestsPerChunk float64 `json:"requests_per_chunk"`
	// InputTokensPerChunk is BulkRep's median: the provider input
	// tokens paid per chunk.
	InputTokensPerChunk float64 `json:"input_tokens_per_chunk"`
	// LiveRequests is the most any repetition's live endpoint got
	// during the bulk load; it must be 0.
	LiveRequests int `json:"live_requests"`
	// LiveChunksPerSec, LiveServiceCPUPer1k (its consumers') and
	// LiveRequestsPerChunk are the pipeline-384 run's live load of the
	// same corpus; 0 without it.
	LiveChunksPerSec     float64 `json:"live_chunks_per_sec,omitempty"`
	LiveServiceCPUPer1k  float64 `json:"live_service_cpu_s_per_1k,omitempty"`
	LiveRequestsPerChunk float64 `json:"live_requests_per_chunk,omitempty"`
	// RequestsRatio is RequestsPerChunk over LiveRequestsPerChunk; 0
	// without both.
	RequestsRatio float64 `json:"requests_ratio,omitempty"`
}

// bulkStats is the bulk run's BulkStats in r, or nil without one.
func bulkStats(r *Report) *BulkStats {
	run := r.measured(ScenarioBulk)
	if run == nil {
		return nil
	}
	s := &BulkStats{Chunks: run.Chunks, MaxAge: bulkMaxAge.String(), Interval: bulkInterval.String(),
		Validating: bulkValidating.String(), InProgress: bulkInProgress.String(), Finalizing: bulkFinalizing.String(),
		ChunksPerSec: run.Median.ChunksPerSec, ServiceCPUPer1k: servicesCPU(run.Median.CPUPer1kByProcess),
		TotalCPUPer1k: run.Median.TotalCPUPer1k}
	var requests, admitted, batches, perChunk, tokensPerChunk []float64
	for _, rep := range run.Reps {
		if b := rep.Bulk; b != nil {
			requests = append(requests, float64(b.ProviderRequests))
			admitted = append(admitted, float64(b.Admitted))
			batches = append(batches, float64(b.Batches))
			perChunk = append(perChunk, b.RequestsPerChunk)
			tokensPerChunk = append(tokensPerChunk, b.InputTokensPerChunk)
			s.LiveRequests = max(s.LiveRequests, b.LiveRequests)
		}
	}
	s.ProviderRequests, s.Admitted, s.Batches, s.RequestsPerChunk = median(requests), median(admitted), median(batches), median(perChunk)
	s.InputTokensPerChunk = median(tokensPerChunk)
	live := r.measured(ScenarioPipeline384)
	if live == nil || live.Chunks <= 0 {
		return s
	}
	s.LiveChunksPerSec, s.LiveServiceCPUPer1k = live.Median.ChunksPerSec, servicesCPU(live.Median.CPUPer1kByProcess)
	s.LiveRequestsPerChunk = float64(live.Median.EmbedRequests) / float64(live.Chunks)
	if s.LiveRequestsPerChunk > 0 {
		s.RequestsRatio = s.RequestsPerChunk / s.LiveRequestsPerChunk
	}
	return s
}

// servicesCPU is the consumers' and the relay's share of CPU figures by
// role: the services that do a chunk's work once it is published.
func servicesCPU(byRole map[string]float64) float64 {
	var sum float64
	for role, v := range byRole {
		if rank(role) == rankConsumer {
			sum += v
		}
	}
	return sum
}

// bulkRatio is the bulk run's requests ratio, 0 without its runs.
func bulkRatio(s *BulkStats) float64 {
	if s == nil {
		return 0
	}
	return s.RequestsRatio
}

// bulkScenario is the bulk scenario.
func (r *runner) bulkScenario() scenario {
	return scenario{name: ScenarioBulk, dims: 384, chunks: r.cfg.Chunks,
		description: fmt.Sprintf("as pipeline-384 with its source in bulk mode (policy mode: batch): every chunk through embed-sim's Batch API, "+
			"%d consumers and the outbox-relay, BULK_MAX_AGE %s, BULK_INTERVAL %s, batches validating %s, in progress %s, finalizing %s "+
			"(compressed from the provider's hours); against pipeline-384", consumers, bulkMaxAge, bulkInterval,
			bulkValidating, bulkInProgress, bulkFinalizing),
		run: func(ctx context.Context, _ int) (RepResult, error) { return r.runBulk(ctx) }}
}

// runBulk runs one repetition of the bulk scenario: the corpus through
// the producer, against consumers whose policy puts its source in bulk
// mode, the outbox-relay, and an embed-sim whose batches are quick;
// measured from the producer's start to the last chunk stored. The load
// must end with every chunk stored, every batch applied or requeued,
// the live endpoint never asked, and reconcile finding nothing wrong.
func (r *runner) runBulk(ctx context.Context) (RepResult, error) {
	corpus, err := r.corpus(r.cfg.Chunks, 0)
	if err != nil {
		return RepResult{}, err
	}
	return r.bulkLoad(ctx, corpus, r.cfg.Chunks, true)
}

// bulkLoad loads the n chunks of corpus with its source in bulk mode and
// measures the load. With allAdmitted every chunk must go through the
// ledger; without, a chunk whose text is already stored may reuse its
// vector instead, as on a corpus whose texts repeat.
func (r *runner) bulkLoad(ctx context.Context, corpus string, n int, allAdmitted bool) (RepResult, error) {
	defer r.killAll()
	const dims = 384
	policy, err := r.bulkPolicy()
	if err != nil {
		return RepResult{}, err
	}
	db, broker, err := r.in.fresh(ctx, dims, false)
	if err != nil {
		return RepResult{}, err
	}
	defer db.drop()
	spec := pipelineSpec{dims: dims, chunks: n, relay: true,
		faults: simFaults{batch: batchPhases{validating: bulkValidating, inProgress: bulkInProgress, finalizing: bulkFinalizing}},
		consumerEnv: []string{"POLICY_FILE=" + policy, "BULK_MAX_AGE=" + bulkMaxAge.String(), "BULK_INTERVAL=" + bulkInterval.String(),
			"METRICS_ADDR=127.0.0.1:0"}}
	f, err := r.startFleet(spec, db, broker)
	if err != nil {
		return RepResult{}, err
	}
	pg0, nats0 := infraCPU("postgres"), infraCPU("nats-server")
	start, prod, err := f.produce(ctx, corpus, benchSource, n)
	if err != nil {
		return RepResult{}, fmt.Errorf("bulk load: %w", err)
	}
	rep, err := f.bulkSettled(ctx, n, allAdmitted)
	if err != nil {
		return RepResult{}, err
	}
	if err := checkReconciled(ctx, db, broker, "bulk load"); err != nil {
		return RepResult{}, err
	}
	if err := f.stop(); err != nil {
		return RepResult{}, err
	}
	res, err := measure(ctx, db, start, n)
	if err != nil {
		return res, err
	}
	if res.Stored != n {
		return res, fmt.Errorf("bulk load: %d of %d chunks stored, %d parked", res.Stored, n, res.Parked)
	}
	res.EmbedRequests, res.Bulk = rep.LiveRequests, rep
	processUsage(&res, append([]*proc{prod}, f.watched()...), pg0, nats0, n)
	return res, nil
}

// bulkPolicy writes the policy file that puts benchSource in bulk mode
// and returns its path.
func (r *runner) bulkPolicy() (string, error) {
	path := filepath.Join(r.work, "bulk-policy.yaml")
	policy := fmt.Sprintf("sources:\n  %s:\n    mode: batch\n", benchSource)
	return path, os.WriteFile(path, []byte(policy), 0o644)
}

// bulkSettled waits until every bulk batch of the fleet's load is
// applied or requeued, then counts what the consumers' metrics and
// embed-sim say the load sent. It fails if the live endpoint was asked
// or, with allAdmitted, if the consumers admitted fewer chunks than the
// corpus holds.
func (f *fleet) bulkSettled(ctx context.Context, chunks int, allAdmitted bool) (*BulkRep, error) {
	rep := &BulkRep{Chunks: chunks}
	settled := []bulk.State{bulk.Applied, bulk.Requeued}
	var unsettled []string
	err := pollUntil(ctx, time.Now().Add(settleTimeout(chunks)), f.watched(), "bulk batches unsettled", func() (bool, error) {
		batches, err := view.List(ctx, f.db.pool, view.ListFilter{Source: benchSource, Limit: chunks})
		if err != nil {
			return false, err
		}
		unsettled, rep.InputTokens, rep.RequestLines = unsettled[:0], 0, 0
		for _, b := range batches {
			if b.UploadedAt != nil {
				rep.InputTokens += b.Tokens
				rep.RequestLines += b.Requests
			}
			if !slices.Contains(settled, b.State) {
				unsettled = append(unsettled, fmt.Sprintf("%d %s", b.ID, b.State))
			}
		}
		rep.Batches = len(batches)
		return len(batches) > 0 && len(unsettled) == 0, nil
	})
	if err != nil {
		return rep, fmt.Errorf("%w (%d of %d batches: %s)", err, len(unsettled), rep.Batches, strings.Join(unsettled, ", "))
	}
	if err := f.bulkCounts(ctx, rep); err != nil {
		return rep, err
	}
	if rep.LiveRequests != 0 || allAdmitted && (rep.Admitted < chunks || rep.Applied < chunks) {
		return rep, fmt.Errorf("bulk load: %d chunks admitted and %d applied of %d, the live endpoint asked %d times; "+
			"want every chunk admitted and applied, the live endpoint never asked", rep.Admitted, rep.Applied, chunks, rep.LiveRequests)
	}
	return rep, nil
}

// bulkCounts fills rep's counts from the consumers' metrics, summed
// over the consumers, and embed-sim's count of live requests.
func (f *fleet) bulkCounts(ctx context.Context, rep *BulkRep) error {
	var requests, admitted, applied float64
	for _, c := range f.cons {
		addr := c.metricsAddr()
		if addr == "" {
			return fmt.Errorf("%s did not log where it serves its metrics", c.role)
		}
		text, err := scrape(ctx, addr)
		if err != nil {
			return err
		}
		for _, m := range []struct {
			sum          *float64
			name, labels string
		}{
			{&requests, "sluice_bulk_provider_requests_total", ""},
			{&admitted, "sluice_bulk_members_total", `outcome="admitted"`},
			{&applied, "sluice_bulk_members_total", `outcome="applied"`},
		} {
			v, err := sumSamples(text, m.name, m.labels)
			if err != nil {
				return fmt.Errorf("%s: %w", c.role, err)
			}
			*m.sum += v
		}
	}
	live, _, err := simCounts(ctx, f.simURL)
	if err != nil {
		return err
	}
	rep.ProviderRequests, rep.Admitted, rep.Applied, rep.LiveRequests = int(requests), int(admitted), int(applied), live
	if admitted > 0 {
		rep.RequestsPerChunk = requests / admitted
		rep.InputTokensPerChunk = float64(rep.InputTokens) / admitted
	}
	return nil
}

// writeBulk prints what the bulk run sent per chunk and cost, beside the
// live load of the same corpus.
func writeBulk(b *strings.Builder, r *Report) {
	s := r.Bulk
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\nbulk: %d chunks through the Batch API in %.0f batches (BULK_MAX_AGE %s, BULK_INTERVAL %s; batches validating %s, "+
		"in progress %s, finalizing %s, compressed from the provider's hours): %s chunks/s, %.3f CPU s per 1k chunks in the consumers "+
		"and relay (%.3f in all), %.0f provider requests: %.4f a chunk; live endpoint asked %d times during the load",
		s.Chunks, s.Batches, s.MaxAge, s.Interval, s.Validating, s.InProgress, s.Finalizing, num(s.ChunksPerSec), s.ServiceCPUPer1k,
		s.TotalCPUPer1k, s.ProviderRequests, s.RequestsPerChunk, s.LiveRequests)
	if s.LiveRequestsPerChunk > 0 {
		fmt.Fprintf(b, ". Live (%s): %s chunks/s, %.3f CPU s per 1k chunks in the consumers, %.4f requests a chunk; bulk / live requests %.3f",
			ScenarioPipeline384, num(s.LiveChunksPerSec), s.LiveServiceCPUPer1k, s.LiveRequestsPerChunk, s.RequestsRatio)
	}
	b.WriteString("\n")
}
