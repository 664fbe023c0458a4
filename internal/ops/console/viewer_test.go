package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
)

// metaMarker is metadata of one dead letter's job: document data only
// operators see.
const metaMarker = "meta-author-7f3e"

// providerDetail is part of the error detail alpha's dead letters carry:
// a provider's error message, which can quote the request.
const providerDetail = "HTTP 503 from the embedder"

// Viewers see neither a job's metadata nor error details, nor search
// them; operators see both.
func TestViewerSeesNoMetadataNorErrorDetail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	meta := json.RawMessage(`{"author":"` + metaMarker + `"}`)
	text := "gamma chunk"
	hash, err := messages.ContentHash(text, meta)
	if err != nil {
		t.Fatal(err)
	}
	job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID("gamma", "g.md"), ChunkCount: 1, DocVersion: 1,
		SourceID: "gamma", SourceNativeID: "g.md", RunID: "run-gamma", ContentHash: hash, Text: text, Metadata: meta, PublishedAt: time.Now().UTC()}
	payload, err := job.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(t.Context(), `
		INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, disposition, error_class,
		    error_detail, stage, attempts, payload, last_outbox_id, first_failed_at, last_failed_at)
		VALUES ('dl-gamma', $1, 0, 1, 'gamma', 'g.md', 'quarantine', 'bad_request', 'HTTP 400: cannot embed "gamma chunk"', 'embed', 1, $2, 1000, now(), now())`,
		job.DocID, payload); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dead-letters/dl-gamma", "/dead-letters/" + b.alphaID, "/dead-letters?source=alpha", "/dead-letters?state=all"} {
		code, body := b.get(t, path, viewerSecret)
		if code != http.StatusOK {
			t.Fatalf("viewer GET %s: %d; want 200", path, code)
		}
		for _, s := range []string{metaMarker, providerDetail, "cannot embed"} {
			if strings.Contains(body, s) {
				t.Errorf("viewer GET %s shows %q", path, s)
			}
		}
		_, body = b.get(t, path, operatorSecret)
		if !strings.Contains(body, providerDetail) && !strings.Contains(body, "cannot embed") {
			t.Errorf("operator GET %s shows no error detail", path)
		}
	}
	if _, body := b.get(t, "/dead-letters/dl-gamma", operatorSecret); !strings.Contains(body, metaMarker) {
		t.Error("operator sees no metadata on the dead letter's page")
	}
	code, body := b.get(t, "/dead-letters?q="+url.QueryEscape("unsupported token"), viewerSecret)
	if code != http.StatusOK || !strings.Contains(body, `id="matched">152<`) || !strings.Contains(body, "are for operators") {
		t.Errorf("viewer error detail search: %d; want it ignored (152 open dead letters match)", code)
	}
}

// The overview shows only its own flash messages: a link's ?flash= text
// never reaches the page.
func TestFlashOnlyFromTheFixedSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, body := b.get(t, "/?flash="+url.QueryEscape("Session expired: call +1 555 0100 to restore access"), viewerSecret)
	if strings.Contains(body, "call +1 555 0100") || strings.Contains(body, `class="flash"`) {
		t.Error("the overview shows the text a link put in ?flash=")
	}
	if _, body := b.get(t, "/?flash=paused", viewerSecret); !strings.Contains(body, "Replays paused; live ingestion continues.") {
		t.Error("the overview does not show its own flash message for ?flash=paused")
	}
}
