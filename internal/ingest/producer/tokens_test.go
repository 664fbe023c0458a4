package producer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// With CHUNK_UNIT=tokens the producer sizes chunks in EMBEDDER_MODEL's
// tokens: emoji, three tokens each in cl100k_base and one by the
// estimate, never make a chunk over CHUNK_SIZE by the model's count. For
// a model without a known tokenizer it says, at start, that its counts
// are approximate.
func TestProducerChunksInTheModelsTokens(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	nats, _ := testenv.NewJetStream(t, broker.Topology{})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "emoji.txt"), []byte(strings.Repeat("🎉👍🏽 party ", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(source, model string) string {
		lookup := serviceEnv(db, nats, map[string]string{"CHUNK_UNIT": "tokens", "CHUNK_SIZE": "64", "CHUNK_OVERLAP": "0", "EMBEDDER_MODEL": model})
		var stdout, stderr testenv.Buffer
		if err := producer.Run(context.Background(), []string{"--source", source, dir}, lookup, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("producer for %s: %v\n%s", model, err, stderr.String())
		}
		return stderr.String()
	}
	chunks := func(source string) []string {
		rows, err := db.Pool.Query(context.Background(), `SELECT convert_from(m.job, 'UTF8')::jsonb->>'text' FROM ingest_manifest m JOIN documents d USING (doc_id) WHERE d.source_id = $1`, source)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	counter, _ := tokens.ForModel("text-embedding-3-small")

	log := run("exact", "text-embedding-3-small")
	if strings.Contains(log, "approximate") {
		t.Errorf("a known model's counts were called approximate: %s", log)
	}
	exact := chunks("exact")
	for _, c := range exact {
		if n := counter.Count(c); n > 64 {
			t.Errorf("a chunk of %d tokens by the model's count, over CHUNK_SIZE 64", n)
		}
	}
	log = run("estimated", "nomic-embed-text")
	if !strings.Contains(log, "approximate") || !strings.Contains(log, "nomic-embed-text") {
		t.Errorf("no warning that nomic-embed-text's counts are approximate: %s", log)
	}
	if estimated := chunks("estimated"); len(exact) == 0 || len(estimated) >= len(exact) {
		t.Errorf("%d chunks by the model's tokens, %d by the estimate: want more by the model's", len(exact), len(estimated))
	}
}
