package sources_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/sources"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A declared source is read back with its settings, records its syncs
// and its follower, and is forgotten by Remove.
func TestDeclareSyncAndRemove(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	op := db.RolePool(t, migrations.OperatorRole)
	want := sources.Table{DSN: "env:APP_DSN", Table: "public.articles", ID: "id", Text: []string{"title", "body"}, Meta: []string{"lang"}, Filter: "published"}
	if err := sources.Add(ctx, op, "articles", sources.KindTable, want); err != nil {
		t.Fatal(err)
	}
	if err := sources.Add(ctx, op, "articles", sources.KindTable, want); !errors.Is(err, sources.ErrExists) {
		t.Fatalf("second add: %v, want ErrExists", err)
	}
	got, err := sources.GetTable(ctx, op, "articles")
	if err != nil || got.Table != want.Table || got.Filter != want.Filter || len(got.Text) != 2 || got.Meta[0] != "lang" {
		t.Fatalf("GetTable = %+v, %v; want %+v", got, err, want)
	}
	prod := db.RolePool(t, migrations.ProducerRole)
	lag := 1500 * time.Millisecond
	if err := sources.RecordSync(ctx, prod, "articles", &lag, nil); err != nil {
		t.Fatal(err)
	}
	if err := sources.Followed(ctx, prod, "articles"); err != nil {
		t.Fatal(err)
	}
	if err := sources.RecordSync(ctx, prod, "articles", nil, errors.New("table gone")); err != nil {
		t.Fatal(err)
	}
	s, err := sources.Get(ctx, op, "articles")
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSyncAt == nil || s.Lag == nil || *s.Lag != lag || s.LastError != "table gone" || !s.Live {
		t.Fatalf("after syncs: %+v; want a sync time, lag %s, the error and live", s, lag)
	}
	if err := sources.Remove(ctx, op, "articles"); err != nil {
		t.Fatal(err)
	}
	if _, err := sources.Get(ctx, op, "articles"); !errors.Is(err, sources.ErrNotFound) {
		t.Fatalf("after remove: %v, want ErrNotFound", err)
	}
	if all, err := sources.List(ctx, op); err != nil || len(all) != 0 {
		t.Fatalf("List = %v, %v; want none", all, err)
	}
}

// An S3 source is declared by its first run, as the producer's role, and
// its settings follow its later runs; a name declared as a table source
// is refused and keeps its kind and settings.
func TestS3SourceIsDeclaredByItsRuns(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	prod := db.RolePool(t, migrations.ProducerRole)
	for _, url := range []string{"s3://corpus/docs/", "s3://corpus/manuals/"} {
		if err := sources.RecordS3(ctx, prod, "docs", sources.S3{URL: url, Endpoint: "http://127.0.0.1:7070"}); err != nil {
			t.Fatalf("RecordS3 %s: %v", url, err)
		}
	}
	got, err := sources.Get(ctx, prod, "docs")
	if err != nil || got.Kind != sources.KindS3 || !strings.Contains(string(got.Settings), `"url": "s3://corpus/manuals/"`) {
		t.Fatalf("Get = %+v (%s), %v; want an s3 source reading s3://corpus/manuals/", got, got.Settings, err)
	}
	op := db.RolePool(t, migrations.OperatorRole)
	table := sources.Table{DSN: "env:APP_DSN", Table: "public.articles", ID: "id", Text: []string{"body"}}
	if err := sources.Add(ctx, op, "articles", sources.KindTable, table); err != nil {
		t.Fatal(err)
	}
	err = sources.RecordS3(ctx, prod, "articles", sources.S3{URL: "s3://corpus/"})
	if !errors.Is(err, sources.ErrOtherKind) || !strings.Contains(err.Error(), "articles is a table source") {
		t.Fatalf("RecordS3 over a table source: %v, want ErrOtherKind naming its kind", err)
	}
	if kept, err := sources.GetTable(ctx, op, "articles"); err != nil || kept.Table != "public.articles" {
		t.Errorf("the table source after a refused S3 run: %+v, %v", kept, err)
	}
}
