package embedsim

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's own, prefixed sluice_embedsim_ so that a drill
// can compare what the pipeline believes it sent with what arrived.
type metrics struct {
	requests *prometheus.CounterVec
	inputs   prometheus.Counter
	faults   *prometheus.CounterVec
	duration prometheus.Histogram

	// The Batch and Files APIs.
	batchRequests *prometheus.CounterVec
	batches       *prometheus.GaugeVec
	batchLineSum  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_embedsim_requests_total",
			Help: "Embeddings requests answered, by HTTP status code (0: no answer).",
		}, []string{"code"}),
		inputs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_embedsim_inputs_total",
			Help: "Inputs received across all embeddings requests.",
		}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_embedsim_faults_total",
			Help: "Requests decided by an injected fault, by kind.",
		}, []string{"kind"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_embedsim_request_duration_seconds",
			Help:    "Time to answer an embeddings request, injected latency included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.batchRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_embedsim_batch_api_requests_total",
		Help: "Requests to the Batch and Files APIs, by route and HTTP status code.",
	}, []string{"route", "code"})
	m.batches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_embedsim_batches",
		Help: "Batches the server holds, by status (lost batches are not held).",
	}, []string{"status"})
	m.batchLineSum = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_embedsim_batch_lines_total",
		Help: "Requests of ended batches, by outcome: completed, failed, expired or cancelled.",
	}, []string{"outcome"})
	for _, st := range batchStatuses {
		m.batches.WithLabelValues(st)
	}
	reg.MustRegister(m.requests, m.inputs, m.faults, m.duration, m.batchRequests, m.batches, m.batchLineSum)
	return m
}

// batchMoved moves a batch between statuses in the gauge; "" is outside
// the server (created, or lost).
func (m *metrics) batchMoved(from, to string) {
	if from != "" {
		m.batches.WithLabelValues(from).Dec()
	}
	if to != "" {
		m.batches.WithLabelValues(to).Inc()
	}
}

// batchLines counts the requests of a batch that has just ended.
func (m *metrics) batchLines(b *simBatch) {
	rest := "expired"
	if b.status == BatchCancelled {
		rest = "cancelled"
	}
	var ok, failed int
	for _, l := range b.lines[:b.finished] {
		if l.status == 200 {
			ok++
		} else {
			failed++
		}
	}
	m.batchLineSum.WithLabelValues("completed").Add(float64(ok))
	m.batchLineSum.WithLabelValues("failed").Add(float64(failed))
	m.batchLineSum.WithLabelValues(rest).Add(float64(len(b.lines) - b.finished))
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// batchRoute serves a route of the Batch or Files API: it checks the API
// key as the embeddings endpoint does, and counts the request.
func (s *Server) batchRoute(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		if s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
			writeError(rec, http.StatusUnauthorized, apiError{Message: "Incorrect API key provided.", Type: typeInvalidRequest, Code: "invalid_api_key"}, 0)
		} else {
			h(rec, r)
		}
		s.metrics.batchRequests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
	}
}

func (m *metrics) observe(status int, fault string, d time.Duration) {
	m.requests.WithLabelValues(strconv.Itoa(status)).Inc()
	if fault != "" {
		m.faults.WithLabelValues(fault).Inc()
	}
	m.duration.Observe(d.Seconds())
}
