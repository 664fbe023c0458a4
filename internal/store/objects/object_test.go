package objects_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/objects"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Same compares what the store lists with what the ledger holds: the
// ETag and the size, and the version id when both name one.
func TestSame(t *testing.T) {
	t.Parallel()
	base := objects.Object{Key: "a", ETag: `"e1"`, Size: 10}
	tests := []struct {
		name   string
		listed objects.Object
		same   bool
	}{
		{"same ETag and size", objects.Object{Key: "a", ETag: `"e1"`, Size: 10}, true},
		{"another ETag", objects.Object{Key: "a", ETag: `"e2"`, Size: 10}, false},
		{"another size", objects.Object{Key: "a", ETag: `"e1"`, Size: 11}, false},
		{"a listing that names a version id", objects.Object{Key: "a", ETag: `"e1"`, VersionID: "v1", Size: 10}, true},
	}
	for _, tt := range tests {
		if got := base.Same(tt.listed); got != tt.same {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.same)
		}
	}
	versioned := objects.Object{Key: "a", ETag: `"e1"`, VersionID: "v1", Size: 10}
	if versioned.Same(objects.Object{Key: "a", ETag: `"e1"`, VersionID: "v2", Size: 10}) {
		t.Error("another version id with the same ETag counts as the same object")
	}
	if !versioned.Same(versioned) {
		t.Error("the same version is not the same object")
	}
}

// The ledger holds what Record wrote, replaces it on a second Record,
// keeps sources and buckets apart, names the sources it holds objects of, and after a listing forgets exactly
// the objects under the prefix the listing did not name.
func TestRecordTouchForget(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	prod := db.RolePool(t, migrations.ProducerRole)
	objs := []objects.Object{
		{Key: "docs/a.md", ETag: `"a1"`, Size: 3, DocID: "s3:docs/a.md"},
		{Key: "docs/b.md", ETag: `"b1"`, VersionID: "v1", Size: 4, DocID: "s3:docs/b.md"},
		{Key: "docs/c.md", ETag: `"c1"`, Size: 5, DocID: "s3:docs/c.md"},
		{Key: "other/d.md", ETag: `"d1"`, Size: 6, DocID: "s3:other/d.md"},
	}
	if err := objects.Record(ctx, prod, "s3", "corpus", "run-1", objs); err != nil {
		t.Fatal(err)
	}
	if err := objects.Record(ctx, prod, "other-source", "corpus", "run-1", objs[:1]); err != nil {
		t.Fatal(err)
	}
	changed := objects.Object{Key: "docs/a.md", ETag: `"a2"`, Size: 7, DocID: "s3:docs/a.md"}
	if err := objects.Record(ctx, prod, "s3", "corpus", "run-2", []objects.Object{changed}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"docs/a.md", "docs/b.md", "docs/c.md", "other/d.md", "docs/missing.md"}
	got, err := objects.Read(ctx, prod, "s3", "corpus", keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got["docs/a.md"] != changed || got["docs/b.md"] != objs[1] {
		t.Fatalf("Read = %+v; want the four recorded objects, docs/a.md at its second record", got)
	}
	if got, _ := objects.Read(ctx, prod, "s3", "another-bucket", keys); len(got) != 0 {
		t.Fatalf("Read of another bucket = %+v, want nothing", got)
	}
	// run-3 lists docs/ and names a.md and b.md: c.md is gone, and
	// other/d.md is outside the listing's prefix.
	if err := objects.Touch(ctx, prod, "s3", "corpus", "run-3", []string{"docs/b.md"}); err != nil {
		t.Fatal(err)
	}
	if err := objects.Record(ctx, prod, "s3", "corpus", "run-3", []objects.Object{changed}); err != nil {
		t.Fatal(err)
	}
	n, err := objects.ForgetUnseen(ctx, prod, "s3", "corpus", "docs/", "run-3")
	if err != nil || n != 1 {
		t.Fatalf("ForgetUnseen = %d, %v; want docs/c.md forgotten alone", n, err)
	}
	got, _ = objects.Read(ctx, prod, "s3", "corpus", keys)
	if _, ok := got["docs/c.md"]; ok || len(got) != 3 {
		t.Fatalf("after ForgetUnseen: %+v; want a.md, b.md and other/d.md", got)
	}
	if err := objects.Forget(ctx, prod, "s3", "corpus", []string{"other/d.md"}); err != nil {
		t.Fatal(err)
	}
	got, _ = objects.Read(ctx, prod, "s3", "corpus", keys)
	if _, ok := got["docs/b.md"]; !ok || len(got) != 2 {
		t.Fatalf("after Forget: %+v; want a.md and b.md", got)
	}
	if got, _ := objects.Read(ctx, prod, "other-source", "corpus", keys); len(got) != 1 {
		t.Fatalf("the other source's ledger = %+v, want its one object untouched", got)
	}
	if got, err := objects.Sources(ctx, prod, []string{"s3", "other-source", "a-directory"}); err != nil || len(got) != 2 || !got["s3"] || !got["other-source"] {
		t.Fatalf("Sources = %v, %v; want the two sources with objects", got, err)
	}
}
