package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/failure/webhook"
)

// DefaultInterval is the default Config.Interval: a daily report.
const DefaultInterval = 24 * time.Hour

// Config is where and how often reports go.
type Config struct {
	// Interval spaces reports; each covers the interval just ended.
	// Defaults to DefaultInterval.
	Interval time.Duration
	// Dir receives each report as quality-<end>.json. Empty for none.
	Dir string
	// URL receives each report as a JSON POST. Empty for none.
	URL string
}

// Enabled reports whether reports go anywhere.
func (c Config) Enabled() bool { return c.Dir != "" || c.URL != "" }

// Validate says what is wrong with c and how to fix it.
func (c Config) Validate() error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("QUALITY_REPORT_INTERVAL %s: use a positive duration such as 24h", c.Interval))
	}
	if c.Dir != "" {
		if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("QUALITY_REPORT_DIR %q: not a directory; create it or leave it empty", c.Dir))
		}
	}
	return errors.Join(errs...)
}

// Deps are what a Reporter works with.
type Deps struct {
	// DB holds ingest_runs and dead_letters. Required.
	DB Querier
	// Log receives a line per report and per failure.
	Log zerolog.Logger
	// Registry receives sluice_quality_reports_total. Nil for none.
	Registry prometheus.Registerer
	// Now is the clock reports are dated by. Defaults to time.Now.
	Now func() time.Time
	// Webhook overrides the client posting to Config.URL, for tests.
	Webhook *webhook.Client
}

// Reporter sends a report of every interval, on schedule.
type Reporter struct {
	cfg     Config
	deps    Deps
	hook    *webhook.Client
	reports *prometheus.CounterVec
}

// New returns a reporter of cfg, which must be valid.
func New(cfg Config, deps Deps) *Reporter {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	r := &Reporter{cfg: cfg, deps: deps, hook: deps.Webhook,
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_quality_reports_total",
			Help: "Per-source quality reports, by destination (dir, webhook) and outcome (sent, failed).",
		}, []string{"destination", "outcome"})}
	if r.hook == nil && cfg.URL != "" {
		r.hook = webhook.New(webhook.Config{URL: cfg.URL, MaxRetries: 3, UserAgent: "sluice-quality-report"})
	}
	if deps.Registry != nil {
		deps.Registry.MustRegister(r.reports)
	}
	return r
}

// Run sends a report at the end of every interval until ctx ends. A
// report that could not be built or sent is logged and counted; the next
// one covers its own interval.
func (r *Reporter) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	since := r.deps.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		until := r.deps.Now()
		if err := r.Send(ctx, since, until); err != nil && ctx.Err() == nil {
			r.deps.Log.Warn().Err(err).Msg("quality report")
		}
		since = until
	}
}

// Send builds the report of [since, until) and sends it to every
// destination.
func (r *Reporter) Send(ctx context.Context, since, until time.Time) error {
	rep, err := Build(ctx, r.deps.DB, since, until)
	if err != nil {
		return err
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	name := "quality-" + rep.Until.Format("20060102T150405Z") + ".json"
	var errs []error
	if r.cfg.Dir != "" {
		errs = append(errs, r.outcome("dir", writeFile(filepath.Join(r.cfg.Dir, name), body)))
	}
	if r.hook != nil {
		errs = append(errs, r.outcome("webhook", post(ctx, r.hook, name, body)))
	}
	r.deps.Log.Info().Time("since", rep.Since).Time("until", rep.Until).Int("sources", len(rep.Sources)).Msg("quality report sent")
	return errors.Join(errs...)
}

func (r *Reporter) outcome(destination string, err error) error {
	outcome := "sent"
	if err != nil {
		outcome = "failed"
		err = fmt.Errorf("%s: %w", destination, err)
	}
	r.reports.WithLabelValues(destination, outcome).Inc()
	return err
}

// writeFile writes body to path whole or not at all.
func writeFile(path string, body []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func post(ctx context.Context, hook *webhook.Client, key string, body []byte) error {
	reply, err := hook.Post(ctx, key, body)
	switch {
	case err != nil:
		return err
	case !reply.OK():
		return fmt.Errorf("the receiver answered %d", reply.Status)
	}
	return nil
}
