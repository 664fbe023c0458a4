package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command line that names no correction, two kinds of one, or a file
// over the producer's limits is a usage error or a refusal before
// anything is read from PostgreSQL.
func TestDLQCorrectRejectsBadFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte("corrected"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "meta.json")
	if err := os.WriteFile(huge, []byte(`{"k":"`+strings.Repeat("x", 64<<10)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--text", text, "--reason", "r"}, 2, "--id"},
		{[]string{"--id", "dl", "--text", text}, 2, "--reason"},
		{[]string{"--id", "dl", "--reason", "r"}, 2, "--text FILE, --metadata FILE, or --rederive"},
		{[]string{"--id", "dl", "--reason", "r", "--rederive"}, 2, "--from"},
		{[]string{"--id", "dl", "--reason", "r", "--rederive", "--from", dir, "--text", text}, 2, "without --text"},
		{[]string{"--id", "dl", "--reason", "r", "--from", dir, "--text", text}, 2, "--from goes with --rederive"},
		{[]string{"--id", "dl", "--reason", "r", "extra", "--text", text}, 2, "takes no arguments"},
		{[]string{"--id", "dl", "--reason", "r", "--metadata", huge}, 1, "the producer's limit"},
		{[]string{"--id", "dl", "--reason", "r", "--text", filepath.Join(dir, "missing")}, 1, "--text"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := sluice(t, map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}, append([]string{"dlq", "correct"}, tc.args...)...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d stdout %q stderr %q; want %d, no output and %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
}
