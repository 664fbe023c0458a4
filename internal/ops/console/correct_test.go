package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// One dead letter is corrected from its page: the preview is an audited
// dry run showing the diff and sending nothing; execute dispatches the
// corrected job to the replay subject; viewers, escalations and a
// missing reason are refused.
func TestCorrectOneDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const id = "dl-alpha-000"
	form := func(extra url.Values) url.Values {
		v := url.Values{"text": {"alpha chunk, corrected\r\nwith a second line"}, "reason": {"the export garbled it"}}
		for k, vs := range extra {
			v[k] = vs
		}
		return v
	}
	if code, body := b.get(t, "/dead-letters/"+id+"?text=1", operatorSecret); code != http.StatusOK || !strings.Contains(body, `id="correct-form"`) {
		t.Fatalf("dead letter page: %d, correction form shown %v", code, strings.Contains(body, `id="correct-form"`))
	}
	if code, _ := b.post(t, "/dead-letters/"+id+"/correct", viewerSecret, form(nil)); code != http.StatusForbidden {
		t.Errorf("viewer correction: %d, want 403", code)
	}
	if code, _ := b.post(t, "/dead-letters/"+id+"/correct", operatorSecret, url.Values{"text": {"x"}}); code != http.StatusBadRequest {
		t.Errorf("correction without a reason: %d, want 400", code)
	}
	if code, _ := b.post(t, "/dead-letters/"+b.escID+"/correct", operatorSecret, form(nil)); code != http.StatusConflict {
		t.Errorf("correction of an escalation: %d, want 409", code)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit`); n != 0 {
		t.Fatalf("%d audit rows after refused corrections; want 0", n)
	}
	code, body := b.post(t, "/dead-letters/"+id+"/correct", operatorSecret, form(nil))
	if code != http.StatusOK || !strings.Contains(body, "-alpha chunk number 0") || !strings.Contains(body, "alpha chunk, corrected\nwith a second line") || !strings.Contains(body, `id="correct-execute"`) {
		t.Fatalf("preview: %d\n%s", code, body)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'correct' AND dry_run`); n != 1 {
		t.Errorf("%d audited dry runs; want 1", n)
	}
	stream, err := b.js.Stream(t.Context(), broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	replays := func() uint64 {
		info, err := stream.Info(t.Context(), jetstream.WithSubjectFilter("ingest.replay.>"))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	if n := replays(); n != 0 {
		t.Fatalf("%d replay jobs after a preview; want 0", n)
	}
	code, body = b.post(t, "/dead-letters/"+id+"/correct", operatorSecret, form(url.Values{"execute": {"1"}}))
	if code != http.StatusOK || !strings.Contains(body, `id="dispatched"`) {
		t.Fatalf("execute: %d\n%s", code, body)
	}
	if n := replays(); n != 1 {
		t.Errorf("%d replay jobs after execute; want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM dead_letters WHERE dead_letter_id = $1 AND replayed_at IS NOT NULL`, id); n != 1 {
		t.Error("the corrected dead letter is not marked replayed")
	}
}
