package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// promtool runs Prometheus's promtool, which `make promtool` builds from
// the module pinned in tools/promtool, in a directory holding the alert
// rules and their tests as d has them.
func promtool(t *testing.T, d *deployment, args ...string) (string, bool) {
	t.Helper()
	bin := os.Getenv("PROMTOOL_BIN")
	if _, err := os.Stat(bin); bin == "" || err != nil {
		t.Fatalf("PROMTOOL_BIN=%q: run the tests with make test, or make promtool and PROMTOOL_BIN=$PWD/bin/promtool", bin)
	}
	dir := t.TempDir()
	for _, f := range []string{"alerts.yml", "alerts_test.yml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(d.files["deploy/prometheus/"+f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
	}
	return string(out), err == nil
}

// TestAlertRulesFire checks the rules with Prometheus's own checker and
// evaluates every alert on the sample series of alerts_test.yml, which
// checkAlertTests holds to a firing and a silent case for each.
func TestAlertRulesFire(t *testing.T) {
	t.Parallel()
	d := load(t, singleStack, edit{})
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		if out, ok := promtool(t, d, args...); !ok {
			t.Errorf("promtool %s failed:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestAlertRuleTestsCatchMistakes proves the rule tests fail on a rule
// whose threshold or duration drifted.
func TestAlertRuleTestsCatchMistakes(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ from, to, alert string }{
		"spike threshold raised": {") > 100\n", ") > 1000\n", "SluiceParkedSpike"},
		"stall waits longer":     {"for: 15m", "for: 30m", "SluiceReplayStalled"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, ok := promtool(t, load(t, singleStack, edit{"deploy/prometheus/alerts.yml", c.from, c.to}), "test", "rules", "alerts_test.yml")
			if ok || !strings.Contains(out, c.alert) {
				t.Errorf("promtool passed a broken %s (ok=%v):\n%s", c.alert, ok, out)
			}
		})
	}
}
