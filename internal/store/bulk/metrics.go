package bulk

import "github.com/prometheus/client_golang/prometheus"

// Metrics are bulk mode's metrics. Requests sent per chunk is
// sum(sluice_bulk_provider_requests_total) /
// sum(sluice_bulk_members_total{outcome="admitted"}).
type Metrics struct {
	batches  *prometheus.GaugeVec
	members  *prometheus.CounterVec
	requests *prometheus.CounterVec
	lines    *prometheus.CounterVec
	endings  *prometheus.CounterVec
}

// Provider calls, the op label of sluice_bulk_provider_requests_total.
const (
	opUpload  = "upload"
	opCreate  = "create"
	opGet     = "get"
	opList    = "list"
	opCancel  = "cancel"
	opContent = "content"
	opDelete  = "delete"
)

// Outcomes of members, the outcome label of sluice_bulk_members_total.
const (
	outcomeAdmitted = "admitted"
	outcomeApplied  = "applied"
	outcomeParked   = "parked"
	outcomeRequeued = "requeued"
)

// NewMetrics returns the metrics, registered on reg (nil for none). It
// panics if they are registered there already.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		batches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_bulk_batches",
			Help: "Bulk batches in the ledger by state, as of the poller's last pass.",
		}, []string{"state"}),
		members: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_bulk_members_total",
			Help: "Chunk jobs admitted to bulk batches, and how they ended: applied (stored), parked, requeued (owed work again).",
		}, []string{"outcome"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_bulk_provider_requests_total",
			Help: "Requests sent to the provider's Batch and Files APIs, by operation.",
		}, []string{"op"}),
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_bulk_request_lines_total",
			Help: "Request lines sent in uploaded batch files.",
		}, nil),
		endings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_bulk_batches_ended_total",
			Help: "Bulk batches settled, by source and how they ended: completed, failed, expired, cancelled, lost (the provider no longer knows the batch), output_lost (its result files were gone).",
		}, []string{"source", "outcome"}),
	}
	for _, s := range States {
		m.batches.WithLabelValues(string(s))
	}
	for _, o := range []string{outcomeAdmitted, outcomeApplied, outcomeParked, outcomeRequeued} {
		m.members.WithLabelValues(o)
	}
	for _, op := range []string{opUpload, opCreate, opGet, opList, opCancel, opContent, opDelete} {
		m.requests.WithLabelValues(op)
	}
	if reg != nil {
		reg.MustRegister(m.batches, m.members, m.requests, m.lines, m.endings)
	}
	return m
}

func (m *Metrics) request(op string)            { m.requests.WithLabelValues(op).Inc() }
func (m *Metrics) member(outcome string, n int) { m.members.WithLabelValues(outcome).Add(float64(n)) }

// ended counts a batch of source settled with outcome, once its
// transaction committed.
func (m *Metrics) ended(source, outcome string) { m.endings.WithLabelValues(source, outcome).Inc() }
