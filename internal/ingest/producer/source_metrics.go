package producer

import "github.com/prometheus/client_golang/prometheus"

// SourceMetrics are a followed source's metrics: a table source's or an
// S3 source's.
type SourceMetrics struct {
	// Pending are the changes queued in the application database, or
	// the store's event notifications a run is answering.
	Pending *prometheus.GaugeVec
	// Lag is the last drain's or event-driven run's lag.
	Lag *prometheus.GaugeVec
}

// NewSourceMetrics registers a followed source's metrics on reg.
func NewSourceMetrics(reg prometheus.Registerer) *SourceMetrics {
	m := &SourceMetrics{
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_source_changes_pending",
			Help: "Changes of a table source queued by its triggers in the application database and not yet drained, as of the producer's last drain; for an S3 source, the store's event notifications the run under way answers.",
		}, []string{"source"}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_source_lag_seconds",
			Help: "A table source's last drain, or an S3 source's last run asked for by events: seconds from the oldest change it carried being queued (the changing statement, or the store's event captured in S3_EVENTS) to the run that carried it having recorded and published its chunk jobs. Storing the vectors comes after, in the consumer, and is not counted.",
		}, []string{"source"}),
	}
	reg.MustRegister(m.Pending, m.Lag)
	return m
}
