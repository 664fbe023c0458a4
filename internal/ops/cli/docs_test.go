package cli_test

import (
	"context"
	"github.com/sluicehq/sluice/migrations"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// sluice docs delete is a dry run unless --execute, refuses a missing
// reason or an unknown id before acting, and says who deleted what in
// docs show and docs ls --deleted, with nothing of the document left.
func TestDocsDeleteShowAndList(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	d := manifest.Documents{DocIDs: []string{messages.DocID("wiki", "a.md"), messages.DocID("wiki", "b.md")}, NativeIDs: []string{"a.md", "b.md"},
		Hashes: []string{"h", "h"}, Statuses: []string{"ready", "ready"}, Codecs: []string{"", ""}, Metadata: []string{"{}", "{}"},
		Versions: []int64{1, 1}, ChunkCounts: []int32{0, 0}}
	if err := manifest.RecordDocuments(context.Background(), db.Pool, "wiki", "run-1", d); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole), "USER": "alice"}
	a := messages.DocID("wiki", "a.md")

	if code, _, errOut := sluice(t, env, "docs", "delete", "--source", "wiki", "--id", "a.md", "--execute"); code != 2 || !strings.Contains(errOut, "--reason") {
		t.Errorf("delete without a reason: exit %d, %q; want a usage error asking for --reason", code, errOut)
	}
	if code, _, errOut := sluice(t, env, "docs", "delete", "--source", "wiki", "--id", "a.md", "--id", "NOPE", "--reason", "r", "--execute"); code != 1 ||
		!strings.Contains(errOut, `unknown document "NOPE"`) || !strings.Contains(errOut, "no such document") ||
		!strings.Contains(errOut, "nothing was deleted") || strings.Contains(errOut, messages.DocID("wiki", "NOPE")) {
		t.Errorf("delete of an unknown id: exit %d, %q; want NOPE named as typed, not its doc id", code, errOut)
	}
	if code, out, _ := sluice(t, env, "docs", "delete", "--source", "wiki", "--id", "a.md", "--reason", "gdpr request 42"); code != 0 ||
		!strings.Contains(out, "DRY RUN") || !strings.Contains(out, "delete 1 document.") || !strings.Contains(out, `would delete "a.md" (`+a+")") {
		t.Errorf("dry run: exit %d, %q", code, out)
	}
	if code, out, _ := sluice(t, env, "docs", "ls", "--source", "wiki", "--deleted"); code != 0 || out != "" {
		t.Errorf("after a dry run, deleted documents: exit %d, %q; want none", code, out)
	}
	if code, out, errOut := sluice(t, env, "docs", "delete", "--source", "wiki", "--id", "a.md", "--reason", "gdpr request 42", "--execute"); code != 0 ||
		!strings.Contains(out, "deleted 1 document (") || !strings.Contains(out, `"a.md" (`+a+") version ") {
		t.Errorf("delete: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ := sluice(t, env, "docs", "show", a)
	if code != 0 || !strings.Contains(out, "status deleted") || !strings.Contains(out, "by cli:alice: gdpr request 42") ||
		!strings.Contains(out, "now: 0 vectors, 0 text rows, 0 payloads") {
		t.Errorf("show: exit %d:\n%s", code, out)
	}
	if code, out, _ := sluice(t, env, "docs", "ls", "--source", "wiki", "--deleted"); code != 0 || !strings.Contains(out, a) || strings.Contains(out, "b.md") {
		t.Errorf("ls --deleted: exit %d, %q", code, out)
	}
	if code, out, _ := sluice(t, env, "docs", "ls", "--source", "wiki"); code != 0 || strings.Contains(out, a) || !strings.Contains(out, "b.md") {
		t.Errorf("ls: exit %d, %q", code, out)
	}
	if code, out, _ := sluice(t, env, "docs", "show", a, "--json"); code != 0 || !strings.Contains(out, `"requested_by": "cli:alice"`) {
		t.Errorf("show --json: exit %d, %q", code, out)
	}
}
