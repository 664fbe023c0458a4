package fleetbudget

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// metrics are a member's: its budget, its share, what it spent and
// waited, and whether it is coordinated with the fleet.
type metrics struct {
	members     prometheus.Gauge
	coordinated prometheus.Gauge
	failures    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, budget *embedder.Budget) *metrics {
	m := &metrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_budget_members",
			Help: "Members drawing on this process's provider budget, itself included, as last counted."}),
		coordinated: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_budget_coordinated",
			Help: "1 while the fleet budget's bucket answers, 0 while this process paces to its fallback share."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_budget_heartbeat_failures_total",
			Help: "Heartbeats that could not read or write the fleet budget's bucket."}),
	}
	if reg == nil {
		return m
	}
	resources := []struct {
		name  string
		whole func() float64
		spent func() float64
	}{
		{"requests", func() float64 { r, _ := budget.Allowances(); return r / 60 }, func() float64 { return float64(budget.Stats().Requests) }},
		{"tokens", func() float64 { _, t := budget.Allowances(); return t / 60 }, func() float64 { return float64(budget.Stats().Tokens) }},
	}
	for _, r := range resources {
		labels := prometheus.Labels{"resource": r.name}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_budget_limit_per_second", ConstLabels: labels,
				Help: "The whole fleet's provider budget per second (0 unlimited): configured, or the provider's when lower."}, r.whole),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_budget_share_per_second", ConstLabels: labels,
				Help: "This process's share of the fleet budget per second (0 unlimited)."}, func() float64 { return r.whole() * budget.Share() }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_budget_spent_total", ConstLabels: labels,
				Help: "Requests and input tokens this process reserved from its budget."}, r.spent))
	}
	reg.MustRegister(m.members, m.coordinated, m.failures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_budget_share_ratio",
			Help: "The fraction of the fleet budget this process paces to."}, budget.Share),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_budget_wait_seconds_total",
			Help: "Time this process's requests waited for budget, summed."}, func() float64 { return budget.Stats().Waited.Seconds() }))
	return m
}
