package producer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/messages"
)

// A parked file's bytes are kept with its dead letter, in the
// transaction that parks it, once per content however many files hold
// it; a file over the cap is parked with its bytes not kept, and its
// dead letter says so and why.
func TestProducerKeepsParkedFilesBytesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	root := formatTree(t, "truncated.pdf", "scan.pdf", "encrypted.pdf")
	for _, dir := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, "truncated.pdf"), filepath.Join(root, dir, "truncated.pdf")); err != nil {
			t.Fatal(err)
		}
	}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{root}, Extractor: corpus.LimitedExtractor{}})
	if err != nil {
		t.Fatal(err)
	}
	// encrypted.pdf is 7231 bytes; the others under 3000.
	p, err := producer.New(producer.Config{SourceID: "docs", MaxKeptFileBytes: 3000}, db.Pool, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"truncated.pdf": messages.KeptFile, "a/truncated.pdf": messages.KeptFile,
		"b/truncated.pdf": messages.KeptFile, "scan.pdf": messages.KeptFile, "encrypted.pdf": messages.NotKeptFile}
	for name, kept := range want {
		var raw []byte
		if err := db.Pool.QueryRow(ctx, `SELECT payload FROM dead_letter_payloads WHERE doc_id = $1`,
			messages.DocID("docs", name)).Scan(&raw); err != nil {
			t.Fatalf("%s: no dead letter payload: %v", name, err)
		}
		pf, err := messages.DecodeParkedFile(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pf.Kept != kept {
			t.Errorf("%s: kept %q (%s), want %q", name, pf.Kept, pf.NotKeptReason, kept)
		}
		if kept == messages.NotKeptFile && !strings.Contains(pf.NotKeptReason, "3000-byte cap") {
			t.Errorf("%s: not kept because %q, want the cap named", name, pf.NotKeptReason)
		}
		var refs int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM file_bytes_refs r JOIN file_bytes b USING (sha256)
			WHERE r.doc_id = $1 AND b.sha256 = $2`, messages.DocID("docs", name), pf.SHA256).Scan(&refs); err != nil {
			t.Fatal(err)
		}
		if (refs == 1) != (kept == messages.KeptFile) {
			t.Errorf("%s: %d references to its kept bytes", name, refs)
		}
	}
	var contents, refs int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM file_bytes), (SELECT count(*) FROM file_bytes_refs)`).Scan(&contents, &refs); err != nil {
		t.Fatal(err)
	}
	if contents != 2 || refs != 4 {
		t.Errorf("%d contents kept for %d references; want 2 (truncated.pdf three times, scan.pdf) for 4", contents, refs)
	}
}
