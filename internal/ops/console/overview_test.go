package console_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store/generation"
)

// The overview names, beside each class's and each source's count, the
// most attempts any of their dead letters took: the fixture's bad
// requests and transient failures went up to 6 (attempts cycle 1 to 6),
// its one escalation took 4.
func TestOverviewShowsWorstAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.get(t, "/fragment/overview", viewerSecret)
	if code != http.StatusOK {
		t.Fatalf("overview: %d", code)
	}
	for _, c := range []struct{ row, want string }{
		{`class=transient_exhausted">transient_exhausted</a></td><td>retry</td><td class="n">120</td>`, "6"},
		{`class=bad_request">bad_request</a></td><td>quarantine</td><td class="n">30</td>`, "6"},
		{`class=policy_secret">policy_secret</a></td><td>escalate</td><td class="n">1</td>`, "4"},
		{`source=alpha">alpha</a></td><td class="n">120</td><td class="n">120</td><td class="n">0</td><td class="n">0</td>`, "6"},
	} {
		m := regexp.MustCompile(regexp.QuoteMeta(c.row) + `<td class="n">(\d+)</td>`).FindStringSubmatch(body)
		if m == nil || m[1] != c.want {
			t.Errorf("row %s: worst attempts %v, want %s\n%s", c.row, m, c.want, body)
		}
	}
	// A run's page groups its dead letters by class the same way.
	code, body = b.get(t, "/runs/run-beta", viewerSecret)
	row := `class=bad_request">bad_request</a></td><td>quarantine</td><td class="n">30</td><td class="n">6</td>`
	if code != http.StatusOK || !strings.Contains(body, row) {
		t.Errorf("run page: %d, lacks %s\n%s", code, row, body)
	}
}

// The overview shows each generation that is not dropped with its
// status, model, dims, progress and backfill as sluice index status
// measures them, read with the console's own role: here four ready
// documents stored in generation 1; in generation 2 one of them stored
// (a minute ago, a rate of 1 in 5 minutes), one parked by generation 2
// alone, on its backfill's second pass with two chunks queued, beside
// the fixture's parked chunks.
func TestOverviewShowsGenerationProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for _, sql := range []string{
		`INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status) VALUES
		 (2, 'small-model', 4, 512, 64, 'tokens', 'building'), (3, 'gone', 4, 512, 64, 'tokens', 'dropped')`,
		`UPDATE index_generations SET dropped_at = now() WHERE generation = 3`,
		`INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		 SELECT 'gen-' || i, 'gamma', 'gen-' || i, 1, 'h', 1, 'ready' FROM generate_series(1, 4) i`,
		`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status)
		 SELECT 'gen-' || i, 0, 1, 'h', 'stored' FROM generate_series(1, 4) i`,
		`INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
		 SELECT 'gen-' || i, 0, 1, 'h', 'sim', 384, array_fill(0.1::real, ARRAY[384]), 't' FROM generate_series(1, 4) i`,
		`INSERT INTO generation_embeddings (generation, doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
		 VALUES (2, 'gen-1', 0, 1, 'h', 'small-model', 4, array_fill(0.1::real, ARRAY[4]), 't')`,
		`UPDATE generation_embeddings SET updated_at = now() - interval '1 minute' WHERE generation = 2`,
		`INSERT INTO generation_parked (generation, doc_id, chunk_index, version, content_hash, source_id, error_class, attempts)
		 VALUES (2, 'gen-2', 0, 1, 'h', 'gamma', 'context_length_exceeded', 1)`,
		`INSERT INTO generation_backfill (generation, pass, scanned, planned) VALUES (2, 2, true, 3)`,
		`INSERT INTO generation_backfill_queue (generation, doc_id, chunk_index, version, content_hash, source_id)
		 SELECT 2, 'gen-' || i, 0, 1, 'h', 'gamma' FROM generate_series(3, 4) i`,
		// A recut generation that has cut one document of them all.
		`INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status, recut)
		 VALUES (4, 'cut-model', 4, 100, 0, 'chars', 'building', true)`,
		`INSERT INTO generation_documents (generation, doc_id, version, chunk_count) VALUES (4, 'gen-1', 1, 2)`,
		`INSERT INTO generation_chunks (generation, doc_id, chunk_index, version, content_hash, source_id, text)
		 VALUES (4, 'gen-1', 0, 1, 'c0', 'gamma', 'first half'), (4, 'gen-1', 1, 1, 'c1', 'gamma', 'second half')`,
		`INSERT INTO generation_embeddings (generation, doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
		 VALUES (4, 'gen-1', 0, 1, 'c0', 'cut-model', 4, array_fill(0.1::real, ARRAY[4]), 'first half')`,
	} {
		if _, err := b.db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	code, body := b.get(t, "/fragment/overview", viewerSecret)
	if code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", code, body)
	}
	chunks := alphaStored + 4
	for _, want := range []string{
		fmt.Sprintf(`<tr id="generation-1"><td>1</td><td>active</td><td class="clip">(EMBEDDER_MODEL)</td><td class="n">384</td><td class="n">4</td><td class="n">0</td><td class="n">%d</td>`, alphaStored),
		fmt.Sprintf(`<progress max="100" value="%.1f" title="4 of %d chunks stored">`, 400/float64(chunks), chunks),
		`%</td><td>written by the pipeline</td></tr>`,
		fmt.Sprintf(`<tr id="generation-2"><td>2</td><td>building</td><td class="clip">small-model</td><td class="n">4</td><td class="n">1</td><td class="n">2</td><td class="n">%d</td>`, alphaStored+1),
		fmt.Sprintf(`<progress max="100" value="%.1f" title="1 of %d chunks stored">`, 100/float64(chunks), chunks),
		// Two owed at one chunk in five minutes: ten minutes to go.
		// Of its alphaStored+1 parked chunks, one is parked in it alone:
		// the one sluice index retry 2 retries.
		`%</td><td>pass 2 scanned · 2 queued · 0.0033/s · about 10m0s left<br>1 parked in this generation alone: <code>sluice index retry 2 --reason R --execute</code></td></tr>`,
		`<tr id="generation-4"><td>4</td><td>building</td><td class="clip">cut-model</td><td class="n">4</td><td class="n">1</td><td class="n">1</td><td class="n">0</td>`,
		fmt.Sprintf(`· %d documents not cut yet (run their sources)`, b.count(t, `SELECT count(*) FROM documents WHERE status <> 'deleted'`)-1),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s\n%s", want, body[strings.Index(body, `id="generations"`):])
		}
	}
	if strings.Contains(body, `id="generation-3"`) {
		t.Error("the overview shows a dropped generation")
	}
	dry, err := generation.New(b.db.Pool).Retry(ctx, 2, generation.Request{By: "test", Reason: "count"})
	if err != nil || dry.Retried != 1 {
		t.Errorf("sluice index retry 2 (dry run) would retry %d (%v); want the 1 the overview suggests it for", dry.Retried, err)
	}
}
