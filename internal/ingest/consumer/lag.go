package consumer

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// lagCollector reports consumer lag at scrape time, from JetStream's own
// bookkeeping, so every consumer replica reports the same durable state.
type lagCollector struct {
	js      jetstream.JetStream
	pending *prometheus.Desc
	oldest  *prometheus.Desc
}

// NewLagCollector returns a collector of sluice_consumer_pending_messages
// and sluice_consumer_oldest_message_age_seconds for the INGEST durables.
func NewLagCollector(js jetstream.JetStream) prometheus.Collector {
	return &lagCollector{js: js,
		pending: prometheus.NewDesc("sluice_consumer_pending_messages",
			"Messages a durable has yet to deliver or see acknowledged.", []string{"durable"}, nil),
		oldest: prometheus.NewDesc("sluice_consumer_oldest_message_age_seconds",
			"Age of the oldest message in INGEST while the durable has work; 0 when it has none. An upper bound per durable.",
			[]string{"durable"}, nil),
	}
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldest
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stream, err := c.js.Stream(ctx, broker.IngestStream)
	if err != nil {
		return
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return
	}
	for _, durable := range []string{broker.WorkersConsumer, broker.ReplayConsumer, broker.BackfillConsumer} {
		cons, err := stream.Consumer(ctx, durable)
		if err != nil {
			continue
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			continue
		}
		pending := float64(ci.NumPending) + float64(ci.NumAckPending)
		age := 0.0
		if pending > 0 && !info.State.FirstTime.IsZero() {
			age = time.Since(info.State.FirstTime).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, pending, durable)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age, durable)
	}
}
