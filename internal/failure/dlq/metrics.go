package dlq

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// statsQueryTimeout bounds the query behind the depth gauges, so that a slow
// or unreachable database delays a scrape by seconds, not until Prometheus
// gives up on the whole target.
const statsQueryTimeout = 5 * time.Second

// triageMetrics are the triage consumer's own counters.
type triageMetrics struct {
	// triaged counts dead letters handled, by what they did to the table:
	// "inserted" (a chunk's first dead letter), "updated" (a newer failure
	// of a known chunk) or "skipped" (a redelivery or a late, older
	// failure, which change nothing).
	triaged *prometheus.CounterVec
}

func newTriageMetrics() *triageMetrics {
	return &triageMetrics{
		triaged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_dlq_triaged_total",
			Help: "Dead letters handled by triage, by effect on dead_letters (inserted, updated, skipped).",
		}, []string{"outcome"}),
	}
}

// depthCollector reports the dead_letters backlog at scrape time. It reads
// the table rather than counting in process because triage may run as
// several replicas and operators resolve rows by hand; only the table
// knows the truth.
type depthCollector struct {
	pool *pgxpool.Pool
	log  zerolog.Logger

	depth     *prometheus.Desc
	ready     *prometheus.Desc
	carryover *prometheus.Desc
	keyed     *prometheus.Desc
	up        *prometheus.Desc
}

var _ prometheus.Collector = (*depthCollector)(nil)

func newDepthCollector(pool *pgxpool.Pool, log zerolog.Logger) *depthCollector {
	return &depthCollector{
		pool: pool,
		log:  log,
		depth: prometheus.NewDesc("sluice_dlq_depth",
			"Unresolved dead letters (dead_letters rows with resolved_at NULL).",
			[]string{"disposition", "error_class"}, nil),
		ready: prometheus.NewDesc("sluice_dlq_ready_to_replay",
			"Unresolved dead letters the replayer re-embeds on its own (retry disposition: transient_exhausted, timeout_exhausted) in state ready (next_retry_at has passed, no operator replay dispatched since); staying above zero means the replay drain has stopped.",
			nil, nil),
		carryover: prometheus.NewDesc("sluice_dlq_replay_carryover",
			"Share of the previous replay pass's failures that failed again in the latest pass, over the last day (see deadletter.ReplayPasses): near 1 means the DLQ has plateaued, near 0 that it drains.",
			nil, nil),
		keyed: prometheus.NewDesc("sluice_keyed_documents_total",
			"Parked documents stored from text a person keyed in (sluice dlq correct --text), by source, as their runs recorded them.",
			[]string{"source"}, nil),
		up: prometheus.NewDesc("sluice_dlq_stats_up",
			"1 when the query behind sluice_dlq_depth and sluice_dlq_ready_to_replay succeeded in this scrape, else 0.",
			nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.ready
	ch <- c.carryover
	ch <- c.keyed
	ch <- c.up
}

// Collect implements prometheus.Collector. On a query failure it reports
// sluice_dlq_stats_up 0 and omits the gauges rather than failing the
// scrape, which would also hide every other metric of the process during
// a database outage — exactly when they matter.
func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsQueryTimeout)
	defer cancel()
	groups, _, err := deadletter.ReadDepth(ctx, c.pool)
	if err != nil {
		c.fail(ch, err)
		return
	}
	var ready int64
	for _, g := range groups {
		if g.BySource {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(g.N), g.Disposition, g.ErrorClass)
		ready += g.Ready
	}
	passes, err := deadletter.ReplayPasses(ctx, c.pool, time.Now().Add(-deadletter.PassWindow))
	if err != nil {
		c.fail(ch, err)
		return
	}
	keyed, err := runs.KeyedBySource(ctx, c.pool)
	if err != nil {
		c.fail(ch, err)
		return
	}
	for source, n := range keyed {
		ch <- prometheus.MustNewConstMetric(c.keyed, prometheus.CounterValue, float64(n), source)
	}
	ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(ready))
	ch <- prometheus.MustNewConstMetric(c.carryover, prometheus.GaugeValue, deadletter.Carryover(passes))
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

func (c *depthCollector) fail(ch chan<- prometheus.Metric, err error) {
	c.log.Warn().Err(err).Msg("dead letter depth query failed")
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
}

// alerterMetrics are the alerter's counters and gauge.
type alerterMetrics struct {
	deadLetters  *prometheus.CounterVec
	escalations  *prometheus.CounterVec
	alertsSent   *prometheus.CounterVec
	parkedRecent prometheus.GaugeFunc
}

// Outcomes of sluice_alerts_sent_total.
const (
	outcomeDelivered = "delivered" // the webhook answered 2xx
	outcomeRejected  = "rejected"  // a 4xx other than 429: not retried
	outcomeFailed    = "failed"    // retries exhausted or a network error
	outcomeLogOnly   = "log_only"  // no webhook configured
)

func newAlerterMetrics(recent func() float64) *alerterMetrics {
	return &alerterMetrics{
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_dlq_dead_letters_total",
			Help: "Dead letters seen by the alerter, each failure counted once per process, by error class and source.",
		}, []string{"error_class", "source_id"}),
		escalations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_escalations_total",
			Help: "Escalated dead letters (compliance policy matches), by the rule that matched.",
		}, []string{"rule"}),
		alertsSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_alerts_sent_total",
			Help: "Alert events (escalation, spike) by kind and outcome (delivered, rejected, failed, log_only).",
		}, []string{"kind", "outcome"}),
		parkedRecent: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_dlq_parked_recent",
			Help: "Dead letters whose failed_at lies within the alerter's spike window.",
		}, recent),
	}
}

func (m *alerterMetrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{m.deadLetters, m.escalations, m.alertsSent, m.parkedRecent} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// spikeWindow counts dead letters by failure time over a sliding window,
// for sluice_dlq_parked_recent and the alerter's spike alert. It buckets
// by a sixtieth of the window, so memory stays bounded however many dead
// letters a spike brings, at the price of letters leaving the window up to
// one bucket early. It is not safe for concurrent use; the Alerter locks.
type spikeWindow struct {
	window, width time.Duration
	threshold     int // negative: never fire
	buckets       map[int64]*spikeBucket
	// firing is the hysteresis: set when a spike is reported, cleared only
	// once the count has fallen below the threshold again, so that one
	// incident raises one alert.
	firing bool
}

type spikeBucket struct {
	n                int
	sources, classes map[string]int
}

func newSpikeWindow(window time.Duration, threshold int) *spikeWindow {
	return &spikeWindow{window: window, width: max(window/60, time.Nanosecond), threshold: threshold,
		buckets: map[int64]*spikeBucket{}}
}

// add records a dead letter that failed at failedAt, as of now, and
// reports whether it tipped the window over the threshold. Failure time,
// not arrival time, is what counts: a backlog of old dead letters drained
// after an outage of the DLQ consumers is history, not a new spike, and is
// ignored once older than the window. A failure time ahead of now (clock
// skew between hosts) counts as now.
func (w *spikeWindow) add(now, failedAt time.Time, source, class string) bool {
	if w.count(now) < w.threshold {
		w.firing = false
	}
	failedAt = minTime(failedAt, now)
	idx := w.index(failedAt)
	if idx <= w.index(now.Add(-w.window)) {
		return false
	}
	b := w.buckets[idx]
	if b == nil {
		b = &spikeBucket{sources: map[string]int{}, classes: map[string]int{}}
		w.buckets[idx] = b
	}
	b.n++
	b.sources[source]++
	b.classes[class]++
	if w.threshold < 0 || w.firing || w.count(now) < w.threshold {
		return false
	}
	w.firing = true
	return true
}

// count returns how many dead letters lie in the window as of now,
// forgetting older ones.
func (w *spikeWindow) count(now time.Time) int {
	lo := w.index(now.Add(-w.window))
	n := 0
	for i, b := range w.buckets {
		if i <= lo {
			delete(w.buckets, i)
			continue
		}
		n += b.n
	}
	return n
}

func (w *spikeWindow) index(t time.Time) int64 {
	// Floor division, so that bucket edges are the same on both sides of
	// the Unix epoch (injected test clocks may start anywhere).
	ns, width := t.UnixNano(), int64(w.width)
	q := ns / width
	if ns%width < 0 {
		q--
	}
	return q
}

// event describes the window as of now, with its top sources and classes.
func (w *spikeWindow) event(now time.Time, topN int) *spikeEvent {
	sources, classes := map[string]int{}, map[string]int{}
	for _, b := range w.buckets {
		for k, v := range b.sources {
			sources[k] += v
		}
		for k, v := range b.classes {
			classes[k] += v
		}
	}
	return &spikeEvent{
		Kind:            kindSpike,
		Count:           w.count(now),
		Threshold:       w.threshold,
		Window:          w.window.String(),
		WindowSeconds:   w.window.Seconds(),
		DetectedAt:      now.UTC(),
		TopSources:      topCounts(sources, topN),
		TopErrorClasses: topCounts(classes, topN),
	}
}

// spikeEvent is the webhook body of a spike alert.
type spikeEvent struct {
	Kind            string    `json:"kind"`
	Count           int       `json:"count"`
	Threshold       int       `json:"threshold"`
	Window          string    `json:"window"`
	WindowSeconds   float64   `json:"window_seconds"`
	DetectedAt      time.Time `json:"detected_at"`
	TopSources      []topN    `json:"top_sources"`
	TopErrorClasses []topN    `json:"top_error_classes"`
}

// topN is one entry of a spike's top sources or classes.
type topN struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// topCounts returns the n largest counts, ties broken by name so that the
// event is deterministic.
func topCounts(counts map[string]int, n int) []topN {
	out := make([]topN, 0, len(counts))
	for k, v := range counts {
		out = append(out, topN{Name: k, Count: v})
	}
	slices.SortFunc(out, func(a, b topN) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out[:min(n, len(out))]
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
