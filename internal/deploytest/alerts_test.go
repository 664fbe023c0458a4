package deploytest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	promql "github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// metric is a metric the Go code defines.
type metric struct {
	kind   string          // counter, gauge, histogram, summary, or desc (a NewDesc: kind unknown)
	labels map[string]bool // nil when the code builds them at run time
	where  string          // file:line of the definition
}

// inventory is every sluice_ metric the Go code defines, found by reading
// the source rather than by constructing the collectors: several of them
// (the DLQ depth, the consumer lag) are built only around a live database
// or JetStream connection, and a constructor's signature changing must not
// hide a metric from this check.
type inventory struct {
	metrics    map[string]metric
	unresolved []string // definitions whose name is not a constant
}

var (
	inventoryOnce sync.Once
	inventoryVal  inventory
	inventoryErr  error
)

func loadInventory(t *testing.T) inventory {
	t.Helper()
	inventoryOnce.Do(func() { inventoryVal, inventoryErr = scanMetrics(repoRoot) })
	if inventoryErr != nil {
		t.Fatal(inventoryErr)
	}
	return inventoryVal
}

const promPkg = "github.com/prometheus/client_golang/prometheus"

// scanMetrics parses the non-test Go files under cmd, internal and pkg and
// collects the metrics defined through prometheus.New* and NewDesc.
func scanMetrics(root string) (inventory, error) {
	inv := inventory{metrics: map[string]metric{}}
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{} // by directory
	for _, dir := range []string{"cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			pkgs[filepath.Dir(path)] = append(pkgs[filepath.Dir(path)], f)
			return nil
		})
		if err != nil {
			return inv, err
		}
	}
	for _, files := range pkgs {
		consts := stringConsts(files)
		for _, f := range files {
			local := importName(f, promPkg)
			if local == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != local {
					return true
				}
				name, m, ok := defineMetric(sel.Sel.Name, call, consts)
				if !ok {
					return true
				}
				m.where = fset.Position(call.Pos()).String()
				switch {
				case name == "":
					inv.unresolved = append(inv.unresolved, m.where)
				case strings.HasPrefix(name, "sluice_"):
					inv.metrics[name] = m
				}
				return true
			})
		}
	}
	return inv, nil
}

// defineMetric reads the name, kind and labels of a prometheus.<fn> call
// that defines a metric; ok is false for any other call. An empty name
// means the name is not a constant.
func defineMetric(fn string, call *ast.CallExpr, consts map[string]string) (name string, m metric, ok bool) {
	if fn == "NewDesc" {
		if len(call.Args) < 3 {
			return "", m, false
		}
		name, _ = stringValue(call.Args[0], consts)
		return name, metric{kind: "desc", labels: stringSet(call.Args[2], consts)}, true
	}
	kind := ""
	for _, k := range []string{"Counter", "Gauge", "Histogram", "Summary", "Untyped"} {
		if strings.HasPrefix(fn, "New"+k) {
			kind = strings.ToLower(k)
		}
	}
	if kind == "" || len(call.Args) == 0 {
		return "", m, false
	}
	opts := call.Args[0]
	if u, isAddr := opts.(*ast.UnaryExpr); isAddr {
		opts = u.X
	}
	lit, isLit := opts.(*ast.CompositeLit)
	if !isLit {
		return "", metric{kind: kind}, true
	}
	var parts [3]string
	for _, e := range lit.Elts {
		kv, isKV := e.(*ast.KeyValueExpr)
		if !isKV {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		i := slices.Index([]string{"Namespace", "Subsystem", "Name"}, key.Name)
		if i < 0 {
			continue
		}
		v, resolved := stringValue(kv.Value, consts)
		if !resolved {
			return "", metric{kind: kind}, true
		}
		parts[i] = v
	}
	name = strings.Join(slices.DeleteFunc(parts[:], func(s string) bool { return s == "" }), "_")
	m = metric{kind: kind, labels: map[string]bool{}}
	if strings.HasSuffix(fn, "Vec") {
		m.labels = nil
		if len(call.Args) > 1 {
			m.labels = stringSet(call.Args[1], consts)
		}
	}
	return name, m, true
}

// stringValue resolves a string literal or a package-level string
// constant.
func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[e.Name]
		return s, ok
	}
	return "", false
}

// stringSet resolves a []string{...} literal; nil means unknown.
func stringSet(e ast.Expr, consts map[string]string) map[string]bool {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return map[string]bool{}
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	set := map[string]bool{}
	for _, el := range lit.Elts {
		s, ok := stringValue(el, consts)
		if !ok {
			return nil
		}
		set[s] = true
	}
	return set
}

func stringConsts(files []*ast.File) map[string]string {
	consts := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringValue(vs.Values[i], nil); ok {
							consts[n.Name] = s
						}
					}
				}
			}
		}
	}
	return consts
}

func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// series returns the metric behind a series name — the name itself, or a
// histogram's or summary's _bucket, _sum and _count — and the labels that
// series may carry beyond the metric's own.
func (inv inventory) series(name string) (metric, []string, bool) {
	if m, ok := inv.metrics[name]; ok {
		return m, nil, true
	}
	for suffix, kinds := range map[string][]string{"_bucket": {"histogram"}, "_sum": {"histogram", "summary"}, "_count": {"histogram", "summary"}} {
		base, found := strings.CutSuffix(name, suffix)
		if m, ok := inv.metrics[base]; found && ok && slices.Contains(kinds, m.kind) {
			if suffix == "_bucket" {
				return m, []string{"le"}, true
			}
			return m, nil, true
		}
	}
	return metric{}, nil, false
}

// scrapeLabels are the labels Prometheus adds to every series it scrapes.
var scrapeLabels = []string{"job", "instance"}

// foreignMetrics are the series queried that the Go code does not define:
// Prometheus' own.
var foreignMetrics = map[string]bool{"up": true, "ALERTS": true, "ALERTS_FOR_STATE": true}

// checkQuery reports every metric a PromQL query selects that the code
// does not define, and every label matcher on a label that metric lacks.
func (inv inventory) checkQuery(where, query string) []string {
	var problems []string
	sels, err := selectors(query)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v in %q", where, err, query)}
	}
	for _, s := range sels {
		if foreignMetrics[s.metric] {
			continue
		}
		m, extra, ok := inv.series(s.metric)
		if !ok {
			hint := ""
			if len(inv.unresolved) > 0 {
				hint = fmt.Sprintf(" (metrics whose names are not constants, at %s, are not seen: use a constant)", strings.Join(inv.unresolved, ", "))
			}
			problems = append(problems, fmt.Sprintf("%s queries %s, which no Go code defines%s", where, s.metric, hint))
			continue
		}
		for _, l := range s.labels {
			if m.labels != nil && !m.labels[l] && !slices.Contains(scrapeLabels, l) && !slices.Contains(extra, l) {
				problems = append(problems, fmt.Sprintf("%s matches %s on label %q; it has %q", where, s.metric, l, slices.Sorted(maps.Keys(m.labels))))
			}
		}
	}
	return problems
}

// selector is a metric name in a query with the labels it matches on.
type selector struct {
	metric string
	labels []string
}

// grafanaInterval is a Grafana interval variable, which stands where
// PromQL wants a duration.
var grafanaInterval = regexp.MustCompile(`\$\{?__\w+\}?`)

// selectors parses a PromQL expression with Prometheus's own parser
// (Grafana's interval variables allowed) and returns its named metric
// selectors.
func selectors(q string) ([]selector, error) {
	expr, err := promql.NewParser(promql.Options{}).ParseExpr(grafanaInterval.ReplaceAllString(q, "5m"))
	if err != nil {
		return nil, err
	}
	var sels []selector
	promql.Inspect(expr, func(node promql.Node, _ []promql.Node) error {
		vs, ok := node.(*promql.VectorSelector)
		if !ok || vs.Name == "" {
			return nil
		}
		s := selector{metric: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" {
				s.labels = append(s.labels, m.Name)
			}
		}
		sels = append(sels, s)
		return nil
	})
	return sels, nil
}

func TestSelectors(t *testing.T) {
	t.Parallel()
	for q, want := range map[string][]selector{
		`sum by (error_class) (rate(sluice_retries_total{job="consumer", error_class!~"a|b"}[$__rate_interval]))`: {{"sluice_retries_total", []string{"job", "error_class"}}},
		`a and on (instance) b offset 5m unless c > bool 1`:                                                       {{"a", nil}, {"b", nil}, {"c", nil}},
		`absent(up{job="consumer"} == 1)`:                                                                         {{"up", []string{"job"}}},
		`{__name__="g"}`:                                                                                          nil,
	} {
		got, err := selectors(q)
		if err != nil {
			t.Errorf("selectors(%q): %v", q, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("selectors(%q) = %v, want %v", q, got, want)
		}
	}
	if _, err := selectors(`sum(rate(x[5m])`); err == nil {
		t.Error("an unbalanced query parsed")
	}
}

// TestInventory guards the source scan itself: it must find metrics of
// every way the code defines them, with their kinds and labels.
func TestInventory(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	for name, want := range map[string]struct {
		kind   string
		labels []string
	}{
		"sluice_parked_total":                        {"counter", []string{"disposition", "error_class"}},
		"sluice_embed_request_duration_seconds":      {"histogram", nil},
		"sluice_outbox_oldest_age_seconds":           {"gauge", nil},
		"sluice_dlq_depth":                           {"desc", []string{"disposition", "error_class"}},
		"sluice_consumer_oldest_message_age_seconds": {"desc", []string{"durable"}},
	} {
		m, ok := inv.metrics[name]
		if !ok {
			t.Errorf("%s not found in the Go source", name)
			continue
		}
		labels := slices.Sorted(maps.Keys(m.labels))
		if m.kind != want.kind || (want.labels != nil && !slices.Equal(labels, want.labels)) {
			t.Errorf("%s: kind %s labels %v, want %s %v", name, m.kind, labels, want.kind, want.labels)
		}
	}
	if _, _, ok := inv.series("sluice_end_to_end_latency_seconds_bucket"); !ok {
		t.Error("a histogram's _bucket series is not recognised")
	}
	if _, _, ok := inv.series("sluice_parked_total_bucket"); ok {
		t.Error("a counter's _bucket series is accepted")
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/prometheus/alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("deploy/prometheus/alerts.yml: %v", err)
	}
	return rf
}

// requiredAlerts name the alerts the operator documentation promises, each
// with the metric it must watch.
var requiredAlerts = map[string]string{
	"SluiceParkedSpike":        "sluice_parked_total",
	"SluiceReplayStalled":      "sluice_dlq_ready_to_replay",
	"SluiceConsumerLagHigh":    "sluice_consumer_oldest_message_age_seconds",
	"SluiceOutboxStuck":        "sluice_outbox_oldest_age_seconds",
	"SluiceCircuitBreakerOpen": "sluice_circuit_breaker_state",
	"SluiceEscalation":         "sluice_escalations_total",
	"SluiceRunHalted":          "sluice_runs_halted",
}

// runbookURL is the shape of every alert's runbook link. Durations and
// expressions are promtool's to check (TestAlertRulesFire).
var runbookURL = regexp.MustCompile(`/README\.md#runbook-[a-z0-9-]+$`)

func checkRules(rf ruleFile, inv inventory) []string {
	var problems []string
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := "rule " + cmpOr(r.Alert, r.Record)
			if r.Alert == "" {
				problems = append(problems, fmt.Sprintf("%s in group %s: only alerting rules belong here", where, g.Name))
				continue
			}
			if seen[r.Alert] {
				problems = append(problems, fmt.Sprintf("alert %s defined twice", r.Alert))
			}
			seen[r.Alert] = true
			problems = append(problems, inv.checkQuery("alert "+r.Alert, r.Expr)...)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				problems = append(problems, fmt.Sprintf("alert %s: severity %q, want critical or warning", r.Alert, s))
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					problems = append(problems, fmt.Sprintf("alert %s has no %s annotation", r.Alert, a))
				}
			}
			if !runbookURL.MatchString(r.Annotations["runbook_url"]) {
				problems = append(problems, fmt.Sprintf("alert %s: runbook_url %q, want a README.md#runbook-... anchor", r.Alert, r.Annotations["runbook_url"]))
			}
		}
		for name, want := range requiredAlerts {
			for _, r := range g.Rules {
				if r.Alert == name && !strings.Contains(r.Expr, want) {
					problems = append(problems, fmt.Sprintf("alert %s must watch %s", name, want))
				}
			}
		}
	}
	for name := range requiredAlerts {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("alert %s is missing", name))
		}
	}
	return problems
}

func TestAlertRules(t *testing.T) {
	t.Parallel()
	for _, problem := range checkRules(loadRules(t), loadInventory(t)) {
		t.Error(problem)
	}
}

type promConfig struct {
	RuleFiles     []string       `yaml:"rule_files"`
	ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
}

type scrapeConfig struct {
	JobName       string `yaml:"job_name"`
	StaticConfigs []struct {
		Targets []string `yaml:"targets"`
	} `yaml:"static_configs"`
	DNSSDConfigs []struct {
		Names []string `yaml:"names"`
		Type  string   `yaml:"type"`
		Port  int      `yaml:"port"`
	} `yaml:"dns_sd_configs"`
}

// targets returns every host:port Prometheus scrapes.
func (c promConfig) targets() map[string]bool {
	out := map[string]bool{}
	for _, sc := range c.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			for _, t := range s.Targets {
				out[t] = true
			}
		}
		for _, d := range sc.DNSSDConfigs {
			for _, n := range d.Names {
				out[fmt.Sprintf("%s:%d", n, d.Port)] = true
			}
		}
	}
	return out
}

func checkPrometheus(c promConfig, p *project) []string {
	var problems []string
	targets := c.targets()
	for _, name := range p.sluiceServices() {
		port := p.listenPort(name)
		if p.file.Services[name].oneShot() || port == "" {
			continue
		}
		if !targets[name+":"+port] {
			problems = append(problems, fmt.Sprintf("prometheus does not scrape %s on port %s, where it serves /metrics", name, port))
		}
	}
	for _, rf := range c.RuleFiles {
		if p.mountSource("prometheus", rf) != "deploy/prometheus/alerts.yml" {
			problems = append(problems, fmt.Sprintf("rule file %s is not deploy/prometheus/alerts.yml mounted into prometheus", rf))
		}
	}
	if len(c.RuleFiles) == 0 {
		problems = append(problems, "prometheus.yml loads no rule_files")
	}
	return problems
}

func loadPromConfig(t *testing.T) promConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c promConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("deploy/prometheus/prometheus.yml: %v", err)
	}
	return c
}

func TestPrometheusConfig(t *testing.T) {
	t.Parallel()
	for _, problem := range checkPrometheus(loadPromConfig(t), loadProject(t)) {
		t.Error(problem)
	}
}

// dashboardMetrics are the metrics the dashboard must chart.
var dashboardMetrics = []string{
	"sluice_pipeline_jobs_total", "sluice_retries_total", "sluice_parked_total",
	"sluice_embed_requests_total", "sluice_embed_request_duration_seconds_bucket",
	"sluice_end_to_end_latency_seconds_bucket", "sluice_consumer_pending_messages",
	"sluice_consumer_oldest_message_age_seconds", "sluice_dlq_depth", "sluice_dlq_ready_to_replay",
	"sluice_outbox_pending_rows", "sluice_outbox_oldest_age_seconds", "sluice_circuit_breaker_state",
	"sluice_escalations_total", "sluice_replays_total",
}

type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []query    `json:"targets"`
	Panels     []panel    `json:"panels"` // a collapsed row's
}

type query struct {
	Expr       string     `json:"expr"`
	Datasource datasource `json:"datasource"`
}

type datasource struct{ Type, UID string }

func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func checkDashboard(d dashboard, dsUID string, inv inventory) []string {
	var problems []string
	if d.UID != "sluice" {
		problems = append(problems, fmt.Sprintf("dashboard uid %q, want sluice", d.UID))
	}
	ids := map[int]bool{}
	queried := map[string]bool{}
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			problems = append(problems, fmt.Sprintf("panel id %d used twice", p.ID))
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			problems = append(problems, fmt.Sprintf("panel %q has no query", p.Title))
		}
		for _, tg := range p.Targets {
			for _, ds := range []datasource{p.Datasource, tg.Datasource} {
				if ds.UID != "" && ds.UID != dsUID {
					problems = append(problems, fmt.Sprintf("panel %q uses datasource %q; the provisioned one is %q", p.Title, ds.UID, dsUID))
				}
			}
			problems = append(problems, inv.checkQuery(fmt.Sprintf("panel %q", p.Title), tg.Expr)...)
			sels, _ := selectors(tg.Expr)
			for _, s := range sels {
				queried[s.metric] = true
			}
		}
	}
	for _, m := range dashboardMetrics {
		if !queried[m] {
			problems = append(problems, fmt.Sprintf("no panel charts %s", m))
		}
	}
	return problems
}

type grafanaProvisioning struct {
	Datasources []struct {
		UID  string `yaml:"uid"`
		Type string `yaml:"type"`
		URL  string `yaml:"url"`
	} `yaml:"datasources"`
	Providers []struct {
		Type    string `yaml:"type"`
		Options struct {
			Path string `yaml:"path"`
		} `yaml:"options"`
	} `yaml:"providers"`
}

func loadYAML[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err == nil {
		err = yaml.Unmarshal(data, &v)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func TestGrafana(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	ds := loadYAML[grafanaProvisioning](t, "deploy/grafana/provisioning/datasources/prometheus.yml")
	prov := loadYAML[grafanaProvisioning](t, "deploy/grafana/provisioning/dashboards/sluice.yml")
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].UID == "" {
		t.Fatalf("datasources %+v: want one prometheus datasource with a fixed uid", ds.Datasources)
	}
	if u, err := url.Parse(ds.Datasources[0].URL); err != nil || u.Hostname() != "prometheus" {
		t.Errorf("datasource url %q: want the prometheus service", ds.Datasources[0].URL)
	}
	for dir, want := range map[string]string{
		"/etc/grafana/provisioning/datasources": "deploy/grafana/provisioning/datasources",
		"/etc/grafana/provisioning/dashboards":  "deploy/grafana/provisioning/dashboards",
	} {
		if got := p.mountSource("grafana", dir); got != want {
			t.Errorf("grafana mounts %q at %s, want %s", got, dir, want)
		}
	}
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" {
		t.Fatalf("dashboard providers %+v: want one file provider", prov.Providers)
	}
	dir := p.mountSource("grafana", prov.Providers[0].Options.Path)
	if dir != "deploy/grafana/dashboards" {
		t.Errorf("the dashboard provider reads %s, where grafana mounts %q, want deploy/grafana/dashboards", prov.Providers[0].Options.Path, dir)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/grafana/dashboards/sluice.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("sluice.json: %v", err)
	}
	for _, problem := range checkDashboard(d, ds.Datasources[0].UID, loadInventory(t)) {
		t.Error(problem)
	}
}

// TestMonitoringChecksCatchMistakes proves the alert, scrape and dashboard
// checks fail on broken copies of the files.
func TestMonitoringChecksCatchMistakes(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	p := loadProject(t)
	rulesWith := func(f func(r *rule)) ruleFile {
		rf := loadRules(t)
		f(&rf.Groups[0].Rules[0])
		return rf
	}
	for name, c := range map[string]struct {
		problems []string
		want     string
	}{
		"unknown metric":      {checkRules(rulesWith(func(r *rule) { r.Expr = "sluice_parked_totl > 1" }), inv), "sluice_parked_totl"},
		"unknown label":       {checkRules(rulesWith(func(r *rule) { r.Expr = `sluice_parked_total{class="x"} > 1` }), inv), `label "class"`},
		"counter as bucket":   {checkRules(rulesWith(func(r *rule) { r.Expr = "sluice_parked_total_bucket > 1" }), inv), "no Go code defines"},
		"no severity":         {checkRules(rulesWith(func(r *rule) { delete(r.Labels, "severity") }), inv), "severity"},
		"no runbook":          {checkRules(rulesWith(func(r *rule) { r.Annotations["runbook_url"] = "https://example.com" }), inv), "runbook_url"},
		"required alert gone": {checkRules(rulesWith(func(r *rule) { r.Alert = "Renamed" }), inv), "is missing"},
		"consumer unscraped": {checkPrometheus(func() promConfig {
			c := loadPromConfig(t)
			c.ScrapeConfigs = slices.DeleteFunc(c.ScrapeConfigs, func(s scrapeConfig) bool { return s.JobName == "consumer" })
			return c
		}(), p), "does not scrape consumer"},
		"dashboard typo": {checkDashboard(dashboard{UID: "sluice", Panels: []panel{{ID: 1, Title: "t",
			Targets: []query{{Expr: "rate(sluice_replay_total[5m])"}}}}}, "prometheus", inv), "sluice_replay_total"},
		"dashboard incomplete": {checkDashboard(dashboard{UID: "sluice"}, "prometheus", inv), "no panel charts sluice_dlq_depth"},
	} {
		if !slices.ContainsFunc(c.problems, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: problems %q, want one mentioning %q", name, c.problems, c.want)
		}
	}
}
