package console

import (
	"context"
	"fmt"
	"html"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// Chart geometry: hourly bars over the shape window, the largest classes
// stacked, the rest folded into "other".
const (
	chartBuckets = 24
	chartClasses = 5
	chartW       = 720
	chartH       = 180
	chartPad     = 30
)

var chartColors = []string{"#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#7f7f7f"}

// arrivalsChart draws dead-letter arrivals (each failure triage recorded)
// per hour by error class, as an accessible SVG.
func arrivalsChart(ctx context.Context, pool *pgxpool.Pool, now time.Time) (template.HTML, error) {
	end := now.Truncate(time.Hour).Add(time.Hour)
	start := end.Add(-chartBuckets * time.Hour)
	cells, err := deadletter.Arrivals(ctx, pool, start, end)
	if err != nil {
		return "", err
	}
	return drawArrivals(start, cells), nil
}

// arrival is one bar segment: an hour bucket, a class, a count.
type arrival = deadletter.Arrival

// drawArrivals renders the bars. It is pure, so it is tested on its own.
func drawArrivals(start time.Time, cells []arrival) template.HTML {
	classes := rankClasses(cells)
	stacks, peak, sum := stackArrivals(cells, classes)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="chart-title"><title id="chart-title">Dead-letter arrivals per hour since %s UTC, by error class: %d in all</title>`,
		chartW, chartH+chartPad+20, start.UTC().Format("2006-01-02 15:04"), sum)
	plotW := float64(chartW - chartPad)
	barW := plotW / chartBuckets
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555"/>`, chartPad, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<text x="2" y="12" font-size="11">%d</text><text x="2" y="%d" font-size="11">0</text>`, peak, chartH)
	for i, s := range stacks {
		y := float64(chartH)
		for k, n := range s {
			if n == 0 || peak == 0 {
				continue
			}
			h := float64(n) / float64(peak) * (chartH - 10)
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d</title></rect>`,
				float64(chartPad)+float64(i)*barW+1, y, barW-2, h, chartColors[k], html.EscapeString(seriesName(classes, k)), n)
		}
		if i%4 == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11">%s</text>`, float64(chartPad)+float64(i)*barW, chartH+14,
				start.Add(time.Duration(i)*time.Hour).UTC().Format("15:04"))
		}
	}
	x := chartPad
	for k := 0; k <= chartClasses && k < len(classes); k++ {
		name := seriesName(classes, k)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			x, chartH+22, chartColors[k], x+14, chartH+31, html.EscapeString(name))
		x += 24 + 7*len(name)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every dynamic string above is escaped
}

// rankClasses orders the error classes of cells by arrivals, most first,
// then by name.
func rankClasses(cells []arrival) []string {
	totals := map[string]int{}
	for _, c := range cells {
		totals[c.Class] += c.N
	}
	classes := make([]string, 0, len(totals))
	for k := range totals {
		classes = append(classes, k)
	}
	sort.Slice(classes, func(i, j int) bool {
		if totals[classes[i]] != totals[classes[j]] {
			return totals[classes[i]] > totals[classes[j]]
		}
		return classes[i] < classes[j]
	})
	return classes
}

// stackArrivals sums cells per bucket and series: the top chartClasses
// classes each have their own, the rest share the last. It returns the
// tallest stack and the sum of all.
func stackArrivals(cells []arrival, classes []string) (stacks [chartBuckets][chartClasses + 1]int, peak, sum int) {
	series := map[string]int{}
	for i, c := range classes {
		series[c] = min(i, chartClasses)
	}
	for _, c := range cells {
		if c.Bucket < 0 || c.Bucket >= chartBuckets {
			continue
		}
		stacks[c.Bucket][series[c.Class]] += c.N
		sum += c.N
	}
	for _, s := range stacks {
		t := 0
		for _, n := range s {
			t += n
		}
		peak = max(peak, t)
	}
	return stacks, peak, sum
}

// seriesName names stack k: a class, or "other" for the folded rest.
func seriesName(classes []string, k int) string {
	if k < chartClasses {
		return classes[k]
	}
	return "other"
}
