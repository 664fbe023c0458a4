// Package benchdoc renders the benchmark page, docs/benchmarks.md, from
// the report make bench writes (bench/results/latest.json): the prose
// of benchmarks.md.tmpl around tables whose every figure comes from the
// report, so the page is never typed by hand.
package benchdoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/template"

	"github.com/sluicehq/sluice/internal/dev/bench"
)

//go:embed benchmarks.md.tmpl
var pageTemplate string

// Load reads a report as make bench writes it.
func Load(path string) (*bench.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r bench.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Render renders the page for r.
func Render(r *bench.Report) ([]byte, error) {
	t, err := template.New("benchmarks.md.tmpl").Funcs(template.FuncMap{
		"num":     num,
		"f2":      func(v float64) string { return fmt.Sprintf("%.2f", v) },
		"f3":      func(v float64) string { return fmt.Sprintf("%.3f", v) },
		"cpu":     cpuCell,
		"full":    func(run bench.RunResult) bool { return run.Median.TotalCPUPer1k > 0 },
		"rate":    func(run bench.RunResult) bool { return run.Median.TotalCPUPer1k == 0 && run.Median.ChunksPerSec > 0 },
		"unit":    func(c bench.CeilingResult) string { return c.Unit },
		"verdict": verdict,
		"target": func(q bench.Ratio) string {
			if q.Target == "" {
				return "—"
			}
			return q.Target
		},
		"itof":    func(n int) float64 { return float64(n) },
		"targets": targets,
		"limits":  limits,
		"dist":    distribution,
		"minEf":   minEfSearch,
		"swept":   swept,
		"pct":     func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
		"mib":     func(b int64) string { return num(float64(b) / (1 << 20)) },
		"date":    func(s string) string { d, _, _ := strings.Cut(s, "T"); return d },
	}).Parse(pageTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// notMeasured is what the page says of a figure its report lacks: a
// report from before the figure was measured, or a run that left it out.
const notMeasured = "not measured in this report"

// targetRow is one line of the targets table.
type targetRow struct {
	Name, Target, Value, Verdict string
}

// targets lists bench.TargetRatios with r's values, and those r lacks
// as not measured.
func targets(r *bench.Report) []targetRow {
	var out []targetRow
	for _, want := range bench.TargetRatios {
		row := targetRow{Name: want.Name, Target: want.Target, Value: notMeasured, Verdict: "—"}
		for _, q := range r.Ratios {
			if q.Name == want.Name && q.Value > 0 {
				row.Value, row.Verdict = fmt.Sprintf("%.2f", q.Value), verdict(q)
			}
		}
		out = append(out, row)
	}
	return out
}

// distribution names how a search result's vectors were drawn; reports
// from before it was recorded drew uniform ones.
func distribution(s bench.SearchResult) string {
	if s.Distribution == "" {
		return "uniform"
	}
	return s.Distribution
}

// minEfSearch renders the smallest ef_search reaching the recall
// target, or the largest tried when none did.
func minEfSearch(s bench.SearchResult) string {
	switch {
	case len(s.Sweep) == 0:
		return notMeasured
	case s.MinEfSearch == 0:
		return fmt.Sprintf("none up to %d", s.Sweep[len(s.Sweep)-1].EfSearch)
	}
	return fmt.Sprint(s.MinEfSearch)
}

// swept reports whether any search result measured recall.
func swept(vs *bench.VectorSearch) bool {
	for _, s := range vs.Results {
		if len(s.Sweep) > 0 {
			return true
		}
	}
	return false
}

// cpuCell is a run's CPU per 1,000 chunks by kind of process, and the
// median of its totals.
func cpuCell(m map[string]float64, total float64) string {
	var producer, consumers, sim, pg, nats float64
	for role, v := range m {
		switch {
		case role == "postgres":
			pg += v
		case role == "nats":
			nats += v
		case strings.Contains(role, "producer"):
			producer += v
		case strings.Contains(role, "consumer"), role == "river-peer", role == "outbox-relay":
			consumers += v
		default:
			sim += v
		}
	}
	p := fmt.Sprintf("%.3f", producer)
	if producer == 0 {
		p = "—"
	}
	return fmt.Sprintf("%s · %.3f · %.3f · %.3f · %.3f = %.3f", p, consumers, sim, pg, nats, total)
}

// verdict says whether a ratio met its target.
func verdict(q bench.Ratio) string {
	switch {
	case q.Value == 0:
		return "n/a (run missing)"
	case q.Met == nil:
		return "reported"
	case *q.Met:
		return "met"
	}
	return "missed"
}

// num renders a rate with thousands separators and no decimals.
func num(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
