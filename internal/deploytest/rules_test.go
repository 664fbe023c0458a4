package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	alertRulesPath = "deploy/prometheus/alerts.yml"
	alertTestsPath = "deploy/prometheus/alerts_test.yml"
)

// promtool returns Prometheus's promtool, which `make promtool` builds from
// the module pinned in tools/promtool and the Makefile names in
// PROMTOOL_BIN.
func promtool(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PROMTOOL_BIN")
	if bin == "" {
		t.Fatal("PROMTOOL_BIN is not set: run the tests with make test, or make promtool and PROMTOOL_BIN=$PWD/bin/promtool")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("PROMTOOL_BIN: %v (make promtool builds it)", err)
	}
	return bin
}

// runPromtool runs promtool in dir and returns its combined output and
// whether it succeeded.
func runPromtool(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
	}
	return string(out), err == nil
}

// TestAlertRulesFire checks the rules with Prometheus's own checker and
// evaluates every alert, firing and not firing, on the sample series of
// alerts_test.yml.
func TestAlertRulesFire(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"check", "rules", alertRulesPath},
		{"test", "rules", alertTestsPath},
	} {
		if out, ok := runPromtool(t, repoRoot, args...); !ok {
			t.Errorf("promtool %s failed:\n%s", strings.Join(args, " "), out)
		}
	}
}

// ruleTests is the part of promtool's rule-test format checked here.
type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestAlertRuleTestsCoverEveryAlert requires a firing and a not-firing case
// for every alert, on series the code exports with the labels it gives
// them, so that a test cannot pass by feeding a rule a metric that does
// not exist.
func TestAlertRuleTestsCoverEveryAlert(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	rt := loadYAML[ruleTests](t, alertTestsPath)
	fires, silent := map[string]bool{}, map[string]bool{}
	for i, tc := range rt.Tests {
		for _, s := range tc.InputSeries {
			for _, problem := range inv.checkQuery(alertTestsPath+" series", s.Series) {
				t.Errorf("test %d: %s", i+1, problem)
			}
		}
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				t.Errorf("%s has no case where %s fires", alertTestsPath, r.Alert)
			}
			if !silent[r.Alert] {
				t.Errorf("%s has no case where %s stays silent", alertTestsPath, r.Alert)
			}
		}
	}
}

// TestAlertRuleTestsCatchMistakes proves the unit tests fail on a rule
// whose threshold or duration drifted.
func TestAlertRuleTestsCatchMistakes(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile(filepath.Join(repoRoot, alertRulesPath))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(repoRoot, alertTestsPath))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ from, to, alert string }{
		"spike threshold raised": {") > 100\n", ") > 1000\n", "SluiceParkedSpike"},
		"stall waits longer":     {"for: 15m", "for: 30m", "SluiceReplayStalled"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(string(rules), c.from) {
				t.Fatalf("%s no longer holds %q: update this test", alertRulesPath, c.from)
			}
			dir := t.TempDir()
			broken := strings.Replace(string(rules), c.from, c.to, 1)
			for file, data := range map[string]string{"alerts.yml": broken, "alerts_test.yml": string(tests)} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, ok := runPromtool(t, dir, "test", "rules", "alerts_test.yml")
			if ok || !strings.Contains(out, c.alert) {
				t.Errorf("promtool passed a broken %s (ok=%v):\n%s", c.alert, ok, out)
			}
		})
	}
}
