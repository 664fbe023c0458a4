package embedsim

import (
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
	reg.MustRegister(m.requests, m.inputs, m.faults, m.duration)
	return m
}

func (m *metrics) observe(status int, fault string, d time.Duration) {
	m.requests.WithLabelValues(strconv.Itoa(status)).Inc()
	if fault != "" {
		m.faults.WithLabelValues(fault).Inc()
	}
	m.duration.Observe(d.Seconds())
}
