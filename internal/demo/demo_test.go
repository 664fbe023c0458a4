package demo_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
)

// The demo converges, reports no leak and no duplicate, and while it runs
// every service's /metrics carries the series operators and alerts
// depend on, with the ones the demo must move above zero.
func TestDemoConvergesAndServicesExportMetrics(t *testing.T) {
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "github.com/sluicehq/sluice/cmd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	scraped := map[string]string{}
	err = demo.Run(context.Background(), demo.Options{
		BinDir: bin, Documents: 60, Outage: 6 * time.Second, Timeout: 3 * time.Minute,
		Stdout: &stdout, Stderr: &stderr,
		OnConverged: func(addrs map[string]string) {
			for name, addr := range addrs {
				scraped[name] = scrape(t, addr)
			}
		},
	})
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	t.Log(report)
	for _, want := range []string{"0 leaked, 0 duplicated", "escalations   1", "invalid_encoding 1", "context_length_exceeded 1", "policy_violation 1"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	byService := map[string][]string{}
	for name, body := range scraped {
		svc := name[:strings.LastIndex(name, "-")]
		byService[svc] = append(byService[svc], body)
	}
	checks := map[string][]struct {
		series   string
		positive bool
	}{
		"consumer": {
			{`sluice_pipeline_jobs_total{outcome="stored"}`, true},
			{`sluice_embed_requests_total{outcome="ok"}`, true},
			{`sluice_embed_request_duration_seconds_count`, true},
			{`sluice_end_to_end_latency_seconds_count`, true},
			{`sluice_consumer_messages_total{durable="workers",result="ack"}`, true},
			{`sluice_circuit_breaker_state`, false},
			{`sluice_consumer_pending_messages{durable="workers"}`, false},
			{`sluice_consumer_oldest_message_age_seconds{durable="workers"}`, false},
		},
		"outbox-relay": {
			{`sluice_outbox_published_total`, true},
			{`sluice_outbox_pending_rows`, false},
			{`sluice_outbox_oldest_age_seconds`, false},
		},
		"dlq-replayer": {
			{`sluice_dlq_triaged_total`, true},
			{`sluice_replays_total{outcome="stored"}`, replayed(report) > 0},
			{`sluice_escalations_total`, true},
			{`sluice_dlq_ready_to_replay`, false},
			{`sluice_dlq_parked_recent`, false},
			{`sluice_dlq_depth`, true},
		},
	}
	for svc, series := range checks {
		bodies := byService[svc]
		if len(bodies) == 0 {
			t.Errorf("no metrics scraped from %s", svc)
			continue
		}
		for _, c := range series {
			total, found := 0.0, false
			for _, body := range bodies {
				v, ok := sum(body, c.series)
				total += v
				found = found || ok
			}
			if !found {
				t.Errorf("%s: %s missing", svc, c.series)
			} else if c.positive && total <= 0 {
				t.Errorf("%s: %s = %v, want it to have moved", svc, c.series, total)
			}
		}
	}
}

// replayed reads the "replayed N" line of the demo report.
func replayed(report string) int {
	m := regexp.MustCompile(`replayed\s+(\d+)`).FindStringSubmatch(report)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func scrape(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Errorf("scrape %s: %v", addr, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// sum adds every sample whose name and labels start with series (labels
// given in series must appear in order as a prefix of the sample's).
func sum(body, series string) (float64, bool) {
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	total, found := 0.0, false
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		if labels != "" && !strings.Contains(m[1], labels) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		total += v
		found = true
	}
	return total, found
}
