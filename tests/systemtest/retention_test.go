package systemtest

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
)

// retentionChunks sizes TestStoredChunksKeepNoJob; the README's storage
// figures come from -retention.chunks=10000.
var retentionChunks = flag.Int("retention.chunks", 400, "chunks in the retention test's run")

// manifestBytes is the size of ingest_manifest, indexes and TOAST
// included, after VACUUM FULL so that dead tuples do not count.
func (s *system) manifestBytes() int64 {
	s.t.Helper()
	ctx := context.Background()
	if _, err := s.db.Pool.Exec(ctx, `VACUUM FULL ingest_manifest`); err != nil {
		s.t.Fatal(err)
	}
	var n int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT pg_total_relation_size('ingest_manifest')`).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// Once a chunk is stored its manifest row holds no job bytes; parked rows
// keep theirs (a replay or a redrive may need them), and reconcile still
// passes. It logs the manifest's size per chunk with every job held and
// after the run.
func TestStoredChunksKeepNoJob(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "poison", Kind: embedsim.PoisonInvalidInput}}}},
		pipeline.Config{})
	n := *retentionChunks
	corpus := map[string]string{}
	for i := range n {
		// About 350 characters: one chunk each at the harness's 400.
		text := fmt.Sprintf("document %d: %s", i, strings.Repeat("water over the weir and under the gate ", 9))
		if i%100 == 7 {
			text = "poison " + text
		}
		corpus[fmt.Sprintf("r%05d.txt", i)] = text
	}
	poisoned := (n + 92) / 100
	s.produce("ret", corpus)
	if got := s.count(`SELECT count(*) FROM ingest_manifest WHERE job IS NOT NULL`); got != n {
		t.Fatalf("%d manifest rows hold their job before the run; want %d", got, n)
	}
	before := s.manifestBytes()
	s.startAll(noBreaker)
	s.eventually(time.Duration(n/20+30)*time.Second, "every chunk stored or parked", func() bool {
		return s.count(`SELECT count(*) FROM ingest_manifest WHERE status IN ('stored', 'parked')`) == n
	})
	if got := s.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored' AND job IS NOT NULL`); got != 0 {
		t.Errorf("%d stored chunks still hold their job bytes", got)
	}
	if got := s.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked' AND job IS NOT NULL`); got != poisoned {
		t.Errorf("%d parked chunks hold their job; want all %d", got, poisoned)
	}
	if got := s.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored' AND content_hash <> ''`); got != n-poisoned {
		t.Errorf("%d stored rows keep their content hash; want %d", got, n-poisoned)
	}
	s.eventually(20*time.Second, "the parked chunks triaged", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters`) == poisoned
	})
	if code, out, errOut := s.sluice("reconcile"); code != 0 {
		t.Fatalf("reconcile exit %d:\n%s%s", code, out, errOut)
	}
	after := s.manifestBytes()
	var chunks int64
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT pg_total_relation_size('chunk_embeddings')`).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d chunks: ingest_manifest %d B/chunk with every job held, %d B/chunk after the run; chunk_embeddings %d B/chunk",
		n, before/int64(n), after/int64(n), chunks/int64(n))
	if after >= before {
		t.Errorf("ingest_manifest is %d bytes after the run, %d before: clearing stored jobs freed nothing", after, before)
	}
}
