package catalog_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/catalog"
)

// The configuration page documents every flag and environment variable
// the services and the operator commands read, so operators never have to
// read the code to configure them.
func TestConfigurationPageDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", catalog.PagePath))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	cliVars, err := catalog.CLISettings()
	if err != nil {
		t.Fatal(err)
	}
	all := catalog.Settings()
	for name, vars := range cliVars {
		all["sluice "+name] = vars
	}
	for binary, vars := range all {
		if len(vars) == 0 {
			t.Errorf("%s registers no settings", binary)
		}
		for _, v := range vars {
			if !strings.Contains(page, "`--"+v.Flag+"`") {
				t.Errorf("%s: flag --%s is not in %s", binary, v.Flag, catalog.PagePath)
			}
			if v.Env != "" && !strings.Contains(page, "`"+v.Env+"`") {
				t.Errorf("%s: environment variable %s is not in %s", binary, v.Env, catalog.PagePath)
			}
		}
	}
}

// The committed configuration page is the one the catalog renders: a
// setting added, removed or changed in the code shows on the page.
func TestConfigurationPageIsUpToDate(t *testing.T) {
	t.Parallel()
	want, err := catalog.Page()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "..", catalog.PagePath))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is out of date with the settings the binaries register: run go generate ./internal/dev/catalog/ and commit the result\n%s",
			catalog.PagePath, firstDifference(string(got), string(want)))
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  committed: %q\n  generated: %q", i+1, gl, wl)
		}
	}
	return ""
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
