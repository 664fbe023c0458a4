package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// Opening the replay dialog is a dry run on the audit trail under the
// signed-in principal; escalations are never offered, dead letters
// already replayed once only when the box is ticked.
func TestReplayDialogIsAuditedAndExcludes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.get(t, "/replay?source=beta", operatorSecret)
	if code != http.StatusOK || !strings.Contains(body, `id="dry-selected">30<`) || !strings.Contains(body, `id="dry-excluded-escalated">1<`) {
		t.Fatalf("dry run of beta: %d; want 30 selected and the escalation left out:\n%s", code, body)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'dry_run' AND requested_by = $1 AND selected = 30
		AND reason IS NULL AND scope->>'source' = 'beta'`, operatorName); n != 1 {
		t.Errorf("%d dry-run audit rows by %s; want 1", n, operatorName)
	}
	if code, body := b.get(t, "/audit", viewerSecret); code != http.StatusOK || !strings.Contains(body, "<td>dry_run</td><td>"+operatorName+"</td>") {
		t.Errorf("audit page: %d; want the dry run by %s:\n%s", code, operatorName, body)
	}
	if code, _ := b.get(t, "/replay?source=beta&disposition=escalate", operatorSecret); code != http.StatusBadRequest {
		t.Errorf("dry run of escalations: %d; want 400", code)
	}

	// Five of beta's failed again after a replay.
	if _, err := b.db.Pool.Exec(t.Context(), `UPDATE dead_letters SET replay_gen = 1
		WHERE dead_letter_id IN ('dl-beta-000', 'dl-beta-001', 'dl-beta-002', 'dl-beta-003', 'dl-beta-004')`); err != nil {
		t.Fatal(err)
	}
	_, body = b.get(t, "/replay?source=beta", operatorSecret)
	if !strings.Contains(body, `id="dry-selected">25<`) || !strings.Contains(body, `id="dry-excluded-replayed">5<`) ||
		!strings.Contains(body, `id="include-replayed"`) {
		t.Errorf("dry run without the box: want 25 selected, 5 left out as replayed, and the box offered:\n%s", body)
	}
	_, body = b.get(t, "/replay?source=beta&include_replayed=1", operatorSecret)
	if !strings.Contains(body, `id="dry-selected">30<`) || !strings.Contains(body, `name="include_replayed" value="1">`) {
		t.Errorf("dry run with the box ticked: want 30 selected and the choice carried to the replay form:\n%s", body)
	}
}
