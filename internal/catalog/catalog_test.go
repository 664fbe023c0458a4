package catalog_test

import (
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
