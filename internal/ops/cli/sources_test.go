package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/objects"
	"github.com/sluicehq/sluice/pkg/messages"
)

// sourcesFixture is Sluice's database and an application database whose
// articles table has rows 1 to 3, and documents of "articles" for rows 2
// to 4 and of a directory source "wiki".
func sourcesFixture(t *testing.T) (map[string]string, *testenv.Database) {
	t.Helper()
	db, app := testenv.NewDatabase(t), testenv.NewDatabase(t)
	ctx := context.Background()
	if _, err := app.Pool.Exec(ctx, `CREATE TABLE articles (id int PRIMARY KEY, body text, hidden bool NOT NULL DEFAULT false);
		INSERT INTO articles VALUES (1, 'one', false), (2, 'two', false), (3, 'three', false), (5, 'hidden', true)`); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ source, native, meta string }{{"articles", "2", `{}`}, {"articles", "3", `{}`}, {"articles", "4", `{}`}, {"wiki", "a.md", `{"path": "a.md"}`}, {"bucket", "docs/b.md", `{"path": "docs/b.md"}`}} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status, metadata)
			VALUES ($1, $2, $3, 1, 'h', 1, 'ready', $4)`, messages.DocID(d.source, d.native), d.source, d.native, d.meta); err != nil {
			t.Fatal(err)
		}
	}
	if err := objects.Record(ctx, db.Pool, "bucket", "corpus", "run-1", []objects.Object{{Key: "docs/b.md", ETag: `"e"`, Size: 1, DocID: messages.DocID("bucket", "docs/b.md")}}); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"DATABASE_URL": db.URL, "APP_DSN": app.URL}, app
}

// sources add declares a table source and installs its triggers; ls
// lists it with the sources documents name, an S3 source by its objects
// in the ledger; reconcile --table-source
// names the rows missing from the index and the documents not in the
// table; rm removes the triggers and the declaration.
func TestSourcesAddListReconcileRemove(t *testing.T) {
	t.Parallel()
	env, app := sourcesFixture(t)
	if code, _, errOut := sluice(t, env, "sources", "add", "table", "articles", "--dsn", "postgres://u:secret@localhost/app",
		"--table", "public.articles", "--id", "id", "--text", "body"); code != 2 || !strings.Contains(errOut, "env:VAR") {
		t.Fatalf("a DSN with a password: exit %d, %q; want 2 and the way to pass it", code, errOut)
	}
	if code, _, errOut := sluice(t, env, "sources", "add", "table", "articles", "--dsn", "env:APP_DSN",
		"--table", "public.articles", "--id", "id", "--text", "nobody"); code == 0 || !strings.Contains(errOut, `no column "nobody"`) {
		t.Fatalf("a missing column: exit %d, %q; want it named", code, errOut)
	}
	if code, out, errOut := sluice(t, env, "sources", "add", "table", "articles", "--dsn", "env:APP_DSN",
		"--table", "public.articles", "--id", "id", "--text", "body", "--filter", "NOT hidden"); code != 0 {
		t.Fatalf("sources add: exit %d\n%s%s", code, out, errOut)
	}
	triggers := func() int {
		var n int
		if err := app.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'articles'::regclass AND NOT tgisinternal`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := triggers(); n != 2 {
		t.Fatalf("%d triggers on the table, want the row and the TRUNCATE trigger", n)
	}

	var list struct {
		Sources []struct {
			Name      string `json:"name"`
			Kind      string `json:"kind"`
			Mode      string `json:"mode"`
			Documents int    `json:"documents"`
		} `json:"sources"`
	}
	sluiceDecode(t, env, &list, "sources", "ls")
	var got []string
	for _, s := range list.Sources {
		got = append(got, s.Name+" "+s.Kind+" "+s.Mode+" "+string(rune('0'+s.Documents)))
	}
	if strings.Join(got, ", ") != "articles table batch 3, bucket s3 batch 1, wiki directory batch 1" {
		t.Fatalf("sources ls = %v", got)
	}

	code, out, _ := sluice(t, env, "reconcile", "--table-source", "articles")
	if code != 1 || !strings.Contains(out, "missing 1, extra 1") || !strings.Contains(out, "missing: 1") || !strings.Contains(out, "extra: 4") {
		t.Fatalf("reconcile --table-source: exit %d\n%s; want row 1 missing and document 4 extra", code, out)
	}

	if code, out, errOut := sluice(t, env, "sources", "rm", "articles"); code != 0 {
		t.Fatalf("sources rm: exit %d\n%s%s", code, out, errOut)
	}
	if n := triggers(); n != 0 {
		t.Errorf("%d triggers left after sources rm", n)
	}
	if code, _, _ := sluice(t, env, "sources", "rm", "articles"); code != 2 {
		t.Errorf("removing an undeclared source: exit %d, want 2", code)
	}
}
