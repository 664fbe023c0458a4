package catalog_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/catalog"
)

// The README documents every flag and environment variable the services
// read, so operators never have to read the code to configure them.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for binary, vars := range catalog.Settings() {
		if len(vars) == 0 {
			t.Errorf("%s registers no settings", binary)
		}
		for _, v := range vars {
			if !strings.Contains(readme, "`--"+v.Flag+"`") && !strings.Contains(readme, "--"+v.Flag+"`") {
				t.Errorf("%s: flag --%s is not in the README", binary, v.Flag)
			}
			if v.Env != "" && !strings.Contains(readme, "`"+v.Env+"`") {
				t.Errorf("%s: environment variable %s is not in the README", binary, v.Env)
			}
		}
	}
}

// A service started without METRICS_ADDR serves /metrics and /readyz on
// loopback only; deployments that scrape it set the address explicitly.
func TestMetricsDefaultsBindLoopback(t *testing.T) {
	t.Parallel()
	for binary, vars := range catalog.Settings() {
		found := false
		for _, v := range vars {
			if v.Env != "METRICS_ADDR" {
				continue
			}
			found = true
			if v.Default == "" {
				continue // disabled
			}
			host, _, err := net.SplitHostPort(v.Default)
			if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
				t.Errorf("%s: METRICS_ADDR defaults to %q; want a loopback address such as 127.0.0.1:PORT", binary, v.Default)
			}
		}
		if !found {
			t.Errorf("%s registers no METRICS_ADDR", binary)
		}
	}
}
