package runs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// haltedCollector reports halted runs at scrape time, from ingest_runs,
// so every replica reports the same state and the series clears the
// moment an operator resumes or cancels.
type haltedCollector struct {
	pool   *pgxpool.Pool
	halted *prometheus.Desc
}

// NewHaltedCollector returns a collector of sluice_runs_halted: the
// number of halted runs, by source.
func NewHaltedCollector(pool *pgxpool.Pool) prometheus.Collector {
	return &haltedCollector{pool: pool,
		halted: prometheus.NewDesc("sluice_runs_halted",
			"Runs halted on their rejection ratio and waiting for an operator, by source.", []string{"source"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *haltedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.halted }

// Collect implements prometheus.Collector; a failed query reports
// nothing rather than a false zero.
func (c *haltedCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := c.pool.Query(ctx, `SELECT source_id, count(*) FROM ingest_runs WHERE status = 'halted' GROUP BY source_id`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var source string
		var n int64
		if rows.Scan(&source, &n) != nil {
			return
		}
		ch <- prometheus.MustNewConstMetric(c.halted, prometheus.GaugeValue, float64(n), source)
	}
}
