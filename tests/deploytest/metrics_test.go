package deploytest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	promql "github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// metric is a metric the Go code defines.
type metric struct {
	kind   string   // the prometheus.New… it is built with: counter, gaugefunc, desc …
	labels []string // nil when the code builds them at run time
}

var newMetric = regexp.MustCompile(`^New(Desc|Counter|Gauge|Histogram|Summary)`)

// codeMetrics reads every sluice_ metric the Go code defines from its
// source rather than by building the collectors: several (the DLQ depth,
// the consumer lag) are built only around a live database or JetStream.
var codeMetrics = sync.OnceValues(func() (map[string]metric, error) {
	metrics := map[string]metric{}
	fset := token.NewFileSet()
	for _, dir := range []string{"cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, _ := n.(*ast.CallExpr)
				if call == nil || len(call.Args) == 0 {
					return true
				}
				sel, _ := call.Fun.(*ast.SelectorExpr)
				if sel == nil || fmt.Sprint(sel.X) != "prometheus" || !newMetric.MatchString(sel.Sel.Name) {
					return true
				}
				name, labels := call.Args[0], ast.Expr(nil)
				switch {
				case sel.Sel.Name == "NewDesc" && len(call.Args) > 2:
					labels = call.Args[2]
				case strings.HasSuffix(sel.Sel.Name, "Vec") && len(call.Args) > 1:
					labels = call.Args[1]
				}
				if u, ok := name.(*ast.UnaryExpr); ok {
					name = u.X
				}
				if opts, ok := name.(*ast.CompositeLit); ok {
					for _, el := range opts.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok && fmt.Sprint(kv.Key) == "Name" {
							name = kv.Value
						}
					}
				}
				lit, _ := name.(*ast.BasicLit)
				if lit == nil {
					err = fmt.Errorf("%s: name the metric with a string literal, which this check can read", fset.Position(call.Pos()))
					return false
				}
				s, _ := strconv.Unquote(lit.Value)
				metrics[s] = metric{strings.ToLower(strings.TrimPrefix(sel.Sel.Name, "New")), stringList(labels)}
				return true
			})
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return metrics, nil
})

// stringList resolves a []string{…} of literals; nil means unknown.
func stringList(e ast.Expr) []string {
	if e == nil || fmt.Sprint(e) == "nil" {
		return []string{}
	}
	lit, _ := e.(*ast.CompositeLit)
	if lit == nil {
		return nil
	}
	out := []string{}
	for _, el := range lit.Elts {
		b, _ := el.(*ast.BasicLit)
		if b == nil {
			return nil
		}
		s, _ := strconv.Unquote(b.Value)
		out = append(out, s)
	}
	return out
}

// series returns the labels a series may carry — a metric's own, or a
// histogram's _bucket, _sum and _count — beyond those Prometheus adds.
func series(metrics map[string]metric, name string) ([]string, bool) {
	if m, ok := metrics[name]; ok {
		return m.labels, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, _ := strings.CutSuffix(name, suffix)
		if m, ok := metrics[base]; ok && base != name && strings.HasPrefix(m.kind, "histogram") {
			if m.labels == nil {
				return nil, true
			}
			return append(slices.Clone(m.labels), "le"), true
		}
	}
	return nil, false
}

// grafanaInterval is a Grafana interval variable, which stands where
// PromQL wants a duration.
var grafanaInterval = regexp.MustCompile(`\$\{?__\w+\}?`)

// checkQuery parses a query with Prometheus's own parser and reports every
// metric it selects that the code does not define, and every label matched
// on that the metric lacks.
func checkQuery(where, query string) []string {
	metrics, err := codeMetrics()
	if err != nil {
		return []string{err.Error()}
	}
	expr, err := promql.NewParser(promql.Options{}).ParseExpr(grafanaInterval.ReplaceAllString(query, "5m"))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v in %q", where, err, query)}
	}
	var problems []string
	promql.Inspect(expr, func(node promql.Node, _ []promql.Node) error {
		vs, _ := node.(*promql.VectorSelector)
		if vs == nil || vs.Name == "" || vs.Name == "up" || strings.HasPrefix(vs.Name, "ALERTS") {
			return nil // Prometheus's own
		}
		labels, ok := series(metrics, vs.Name)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s queries %s, which no Go code defines", where, vs.Name))
		}
		for _, m := range vs.LabelMatchers {
			if labels != nil && !slices.Contains(slices.Concat(labels, []string{"__name__", "job", "instance"}), m.Name) {
				problems = append(problems, fmt.Sprintf("%s matches %s on label %q; it has %q", where, vs.Name, m.Name, labels))
			}
		}
		return nil
	})
	return problems
}

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert, Expr string
			Annotations map[string]string
		}
	}
}

func parse[T any](d *deployment, path string) (T, error) {
	var v T
	err := yaml.Unmarshal([]byte(d.files[path]), &v)
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return v, err
}

// checkQueries requires every metric an alert or a dashboard panel
// queries to exist, and every alert's runbook link to land on a heading of
// docs/operations.md.
func checkQueries(d *deployment) (problems []string) {
	rules, err := parse[ruleFile](d, "deploy/prometheus/alerts.yml")
	if err != nil {
		return []string{err.Error()}
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatch(d.files["docs/operations.md"], -1) {
		// The anchor GitHub gives a heading.
		anchors[strings.ReplaceAll(regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")] = true
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			problems = append(problems, checkQuery("alert "+r.Alert, r.Expr)...)
			if _, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "docs/operations.md#"); !anchors[anchor] {
				problems = append(problems, fmt.Sprintf("alert %s links to %q, but no heading of docs/operations.md has that anchor", r.Alert, r.Annotations["runbook_url"]))
			}
		}
	}
	var dashboard struct{ Panels []panel }
	if err := json.Unmarshal([]byte(d.files["deploy/grafana/dashboards/sluice.json"]), &dashboard); err != nil {
		return append(problems, err.Error())
	}
	ds, _ := parse[struct{ Datasources []struct{ UID, URL string } }](d, "deploy/grafana/provisioning/datasources/prometheus.yml")
	for _, p := range dashboard.Panels {
		for _, q := range p.Targets {
			problems = append(problems, checkQuery(fmt.Sprintf("panel %q", p.Title), q.Expr)...)
			for _, uid := range []string{p.Datasource.UID, q.Datasource.UID} {
				if len(ds.Datasources) != 1 || uid != "" && uid != ds.Datasources[0].UID {
					problems = append(problems, fmt.Sprintf("panel %q uses datasource %q, not the one provisioned", p.Title, uid))
				}
			}
		}
	}
	return problems
}

// panel is a dashboard panel; a row holds no query.
type panel struct {
	Title      string
	Datasource struct{ UID string }
	Targets    []struct {
		Expr       string
		Datasource struct{ UID string }
	}
}

// checkAlertTests requires alerts_test.yml to feed the rules only series
// the code exports, and to hold a firing and a silent case for every alert.
func checkAlertTests(d *deployment) (problems []string) {
	tests, err := parse[struct {
		Tests []struct {
			InputSeries []struct{ Series string } `yaml:"input_series"`
			Cases       []struct {
				Alertname string
				ExpAlerts []any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}](d, "deploy/prometheus/alerts_test.yml")
	rules, err2 := parse[ruleFile](d, "deploy/prometheus/alerts.yml")
	if err != nil || err2 != nil {
		return []string{fmt.Sprint(err, err2)}
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, s := range tc.InputSeries {
			problems = append(problems, checkQuery("alerts_test.yml series", s.Series)...)
		}
		for _, c := range tc.Cases {
			fires[c.Alertname] = fires[c.Alertname] || len(c.ExpAlerts) > 0
			silent[c.Alertname] = silent[c.Alertname] || len(c.ExpAlerts) == 0
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !silent[r.Alert] {
				problems = append(problems, fmt.Sprintf("alerts_test.yml needs a case where %s fires and one where %s stays silent", r.Alert, r.Alert))
			}
		}
	}
	return problems
}

// scrapeTargets returns every host:port Prometheus scrapes.
func scrapeTargets(d *deployment) map[string]bool {
	c, _ := parse[struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct{ Targets []string } `yaml:"static_configs"`
			DNSSDConfigs  []struct {
				Names []string
				Port  int
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}](d, "deploy/prometheus/prometheus.yml")
	out := map[string]bool{}
	for _, sc := range c.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			for _, t := range s.Targets {
				out[t] = true
			}
		}
		for _, dns := range sc.DNSSDConfigs {
			for _, n := range dns.Names {
				out[fmt.Sprintf("%s:%d", n, dns.Port)] = true
			}
		}
	}
	return out
}

// checkGrafana requires the monitoring services to load the files checked
// here: Prometheus the alert rules, Grafana the datasource, its provider
// and the dashboard it reads.
func checkGrafana(d *deployment) (problems []string) {
	prom, _ := parse[struct {
		RuleFiles []string `yaml:"rule_files"`
	}](d, "deploy/prometheus/prometheus.yml")
	prov, _ := parse[struct {
		Providers []struct{ Options struct{ Path string } }
	}](d, "deploy/grafana/provisioning/dashboards/sluice.yml")
	ds, _ := parse[struct{ Datasources []struct{ URL string } }](d, "deploy/grafana/provisioning/datasources/prometheus.yml")
	mounts := map[string]string{"/etc/grafana/provisioning/datasources": "deploy/grafana/provisioning/datasources",
		"/etc/grafana/provisioning/dashboards": "deploy/grafana/provisioning/dashboards"}
	if len(prom.RuleFiles) != 1 || d.mountSource("prometheus", prom.RuleFiles[0]) != "deploy/prometheus/alerts.yml" {
		problems = append(problems, fmt.Sprintf("prometheus loads rule files %q: want deploy/prometheus/alerts.yml mounted at one", prom.RuleFiles))
	}
	if len(prov.Providers) == 1 {
		mounts[prov.Providers[0].Options.Path] = "deploy/grafana/dashboards"
	}
	for target, want := range mounts {
		if got := d.mountSource("grafana", target); got != want {
			problems = append(problems, fmt.Sprintf("grafana mounts %q at %s, want %s", got, target, want))
		}
	}
	if len(ds.Datasources) != 1 {
		return append(problems, "want one provisioned datasource")
	}
	if u, err := url.Parse(ds.Datasources[0].URL); err != nil || u.Hostname() != "prometheus" {
		problems = append(problems, fmt.Sprintf("datasource url %q: want the prometheus service", ds.Datasources[0].URL))
	}
	return problems
}
