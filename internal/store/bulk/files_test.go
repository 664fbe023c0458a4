package bulk_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/migrations"
)

// No request file stays at the provider: a refused create deletes its
// file, a builder killed between an upload and its record leaves a trace
// the poller's next pass follows to delete the file, and once the load
// converged the provider holds nothing of it. A file Sluice uploaded that
// no batch uses is reported and deleted; another's file is left alone.
func TestNoFileLeftAtTheProvider(t *testing.T) {
	t.Parallel()
	sim := embedsim.Config{}
	sim.Batch = phases()
	sim.Batch.Faults = embedsim.BatchFaults{RefuseCreateRate: 1}
	tb := setup(t, sim, bulk.Config{})
	members := corpus("wiki", 12, plain)
	tb.admit(t, members)
	tb.clock.Advance(tb.cfg.MaxAge)

	if err := tb.builder(t, nil).Pass(tb.ctx); err != nil {
		t.Fatal(err)
	}
	if st := tb.state(t, 1); st != "sealed" {
		t.Fatalf("batch refused at create is %s, want sealed again", st)
	}
	if files := tb.providerFiles(t); len(files) != 0 {
		t.Fatalf("after a refused create the provider holds %v, want nothing", files)
	}
	if err := tb.sim.SetBatchFaults(embedsim.BatchFaults{}); err != nil {
		t.Fatal(err)
	}

	crash, hit := crashAt(bulk.CrashUploaded)
	if err := tb.builder(t, crash).Pass(tb.ctx); !errors.Is(err, errCrash) || !*hit {
		t.Fatalf("builder killed after its upload: %v", err)
	}
	if files := tb.providerFiles(t); len(files) != 1 {
		t.Fatalf("after the kill the provider holds %v, want the unrecorded upload", files)
	}
	p := tb.poller(t, nil)
	if err := p.Pass(tb.ctx); err != nil {
		t.Fatal(err)
	}
	if files := tb.providerFiles(t); len(files) != 0 {
		t.Fatalf("after the poller's pass the provider holds %v, want nothing", files)
	}

	tb.converge(t, tb.builder(t, nil), p)
	for k, v := range tb.outcomes(t, members) {
		if v != "stored" {
			t.Errorf("%s: %s, want stored", k, v)
		}
	}
	if files := tb.providerFiles(t); len(files) != 0 {
		t.Errorf("after the load the provider holds %v, want nothing", files)
	}

	orphan := tb.upload(t, bulk.UploadName(99))
	foreign := tb.upload(t, "someone-else.jsonl")
	operator := tb.db.RolePool(t, migrations.OperatorRole)
	got, err := bulk.Orphans(tb.ctx, operator, tb.client)
	if err != nil || len(got) != 1 || got[0].ID != orphan {
		t.Fatalf("Orphans = %+v, %v; want the one Sluice uploaded, %s", got, err, orphan)
	}
	if n, err := bulk.DeleteOrphans(tb.ctx, tb.client, got); err != nil || n != 1 {
		t.Fatalf("DeleteOrphans = %d, %v", n, err)
	}
	if files := tb.providerFiles(t); !slices.Equal(files, []string{"someone-else.jsonl"}) {
		t.Errorf("after deleting orphans the provider holds %v, want only %s (%s)", files, "someone-else.jsonl", foreign)
	}
}

// An erased document's text leaves the provider with the request file
// that held it: a batch not yet created is built again without it.
func TestErasedTextLeavesTheProvider(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{})
	members := corpus("wiki", 8, plain)
	tb.admit(t, members)
	tb.clock.Advance(tb.cfg.MaxAge)
	crash, _ := crashAt(bulk.CrashCreateRequested)
	if err := tb.builder(t, crash).Pass(tb.ctx); !errors.Is(err, errCrash) {
		t.Fatalf("builder killed before its create: %v", err)
	}
	before := tb.providerFiles(t)
	gone := members[0].DocID
	if _, err := tb.db.RolePool(t, migrations.ProducerRole).Exec(tb.ctx, `DELETE FROM bulk_members WHERE doc_id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	if err := tb.poller(t, nil).Pass(tb.ctx); err != nil {
		t.Fatal(err)
	}
	if files := tb.providerFiles(t); len(before) != 1 || len(files) != 0 {
		t.Fatalf("provider files %v before the pass, %v after; want the one with erased text deleted", before, files)
	}
	tb.converge(t, tb.builder(t, nil), tb.poller(t, nil))
	for _, m := range members {
		want := "stored"
		if m.DocID == gone {
			want = "missing"
		}
		if got := tb.outcomes(t, []bulk.Member{m}); len(got) != 1 || firstValue(got) != want {
			t.Errorf("%s:%d: %v, want %s", m.DocID, m.ChunkIndex, got, want)
		}
	}
	if files := tb.providerFiles(t); len(files) != 0 {
		t.Errorf("after the load the provider holds %v, want nothing", files)
	}
}

func firstValue(m map[string]string) string {
	for _, v := range m {
		return v
	}
	return ""
}

// providerFiles lists the names of the provider's input files, sorted.
func (tb *testBundle) providerFiles(t *testing.T) []string {
	t.Helper()
	files, err := tb.client.AllFiles(tb.ctx, batchapi.PurposeBatch)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Filename
	}
	slices.Sort(names)
	return names
}

// upload puts a small request file named name at the provider and returns
// its id.
func (tb *testBundle) upload(t *testing.T, name string) string {
	t.Helper()
	f, err := tb.client.UploadFile(tb.ctx, name, strings.NewReader(`{"custom_id":"x","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":["x"]}}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return f.ID
}
