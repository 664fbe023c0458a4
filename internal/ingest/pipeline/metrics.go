package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's Prometheus series.
type Metrics struct {
	Outcomes      *prometheus.CounterVec
	Retries       *prometheus.CounterVec
	Parked        *prometheus.CounterVec
	EmbedRequests *prometheus.CounterVec
	EmbedDuration prometheus.Histogram
	EndToEnd      prometheus.Histogram
	DocumentReady prometheus.Histogram
	Bisections    prometheus.Counter
	// Held counts deliveries held back because their run is halted or
	// the embedder's breaker is open.
	Held prometheus.Counter
	// RunsHalted counts runs this process halted, by source.
	RunsHalted *prometheus.CounterVec
	// Reuse counts chunks whose vector was not paid for: the store held
	// one of the same text, or another chunk of the batch carried it to
	// the embedder, by index generation.
	Reuse *prometheus.CounterVec
	// ProviderInputs and ProviderTokens count the inputs, and their
	// tokens by the model's counter, of the embedding requests the
	// provider answered with vectors, by index generation.
	ProviderInputs *prometheus.CounterVec
	ProviderTokens *prometheus.CounterVec
}

// NewMetrics creates the pipeline metrics and registers them on reg (nil
// for none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_pipeline_jobs_total",
			Help: "Chunk jobs processed, by outcome (stored, duplicate, superseded, retry, parked).",
		}, []string{"outcome"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_retries_total",
			Help: "Jobs sent back for a later delivery, by error class.",
		}, []string{"error_class"}),
		Parked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_parked_total",
			Help: "Jobs parked as dead letters, by disposition and error class.",
		}, []string{"disposition", "error_class"}),
		EmbedRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_embed_requests_total",
			Help: "Embedding requests, by outcome (ok, retry, quarantine, ambiguous, escalate).",
		}, []string{"outcome"}),
		EmbedDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_embed_request_duration_seconds",
			Help:    "Duration of embedding requests, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		EndToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_end_to_end_latency_seconds",
			Help:    "Time from when JetStream took a chunk's message (its stream timestamp) to its vector's commit.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 16),
		}),
		DocumentReady: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_document_ready_latency_seconds",
			Help:    "Time from when JetStream took a document version's first chunk to the commit that made the whole version ready (searchable).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 16),
		}),
		Bisections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_bisections_total",
			Help: "Batches split in two to isolate a rejected input.",
		}),
		Held: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_held_deliveries_total",
			Help: "Chunk deliveries held back, without spending their budget, because their run is halted or the embedder's breaker is open.",
		}),
		RunsHalted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_runs_halted_total",
			Help: "Runs halted because their rejection ratio crossed the threshold, by source.",
		}, []string{"source"}),
		Reuse: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_embedding_reuse_total",
			Help: "Chunks given a vector without a provider call: one the store held for the same text, model and dimension, or one another chunk of the batch carried, by index generation.",
		}, []string{"generation"}),
		ProviderInputs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_embedding_provider_inputs_total",
			Help: "Inputs the embedding provider answered with vectors, by index generation.",
		}, []string{"generation"}),
		ProviderTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_embedding_provider_tokens_total",
			Help: "Input tokens, by the model's tokenizer (an estimate for a model without one), of the inputs the embedding provider answered with vectors, by index generation.",
		}, []string{"generation"}),
	}
	// Every outcome is exported from the start, at zero, so that rates and
	// alerts see a series before its first event.
	for _, o := range outcomeNames[1:] {
		m.Outcomes.WithLabelValues(o)
	}
	for _, o := range []string{"ok", "retry", "quarantine", "ambiguous", "escalate"} {
		m.EmbedRequests.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.Outcomes, m.Retries, m.Parked, m.EmbedRequests, m.EmbedDuration, m.EndToEnd, m.DocumentReady, m.Bisections, m.Held, m.RunsHalted,
			m.Reuse, m.ProviderInputs, m.ProviderTokens)
	}
	return m
}

func (m *Metrics) observeEmbed(outcome string, d time.Duration) {
	m.EmbedRequests.WithLabelValues(outcome).Inc()
	m.EmbedDuration.Observe(d.Seconds())
}
