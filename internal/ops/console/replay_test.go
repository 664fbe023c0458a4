package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Opening the replay dialog (a POST) is a dry run on the audit trail under the
// signed-in principal; escalations are never offered, dead letters
// already replayed once only when the box is ticked.
func TestReplayDialogIsAuditedAndExcludes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.post(t, "/replay/dry-run", operatorSecret, url.Values{"source": {"beta"}})
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
	if code, _ := b.post(t, "/replay/dry-run", operatorSecret, url.Values{"source": {"beta"}, "disposition": {"escalate"}}); code != http.StatusBadRequest {
		t.Errorf("dry run of escalations: %d; want 400", code)
	}

	// Five of beta's failed again after a replay.
	if _, err := b.db.Pool.Exec(t.Context(), `UPDATE dead_letters SET replay_gen = 1
		WHERE dead_letter_id IN ('dl-beta-000', 'dl-beta-001', 'dl-beta-002', 'dl-beta-003', 'dl-beta-004')`); err != nil {
		t.Fatal(err)
	}
	_, body = b.post(t, "/replay/dry-run", operatorSecret, url.Values{"source": {"beta"}})
	if !strings.Contains(body, `id="dry-selected">25<`) || !strings.Contains(body, `id="dry-excluded-replayed">5<`) ||
		!strings.Contains(body, `id="include-replayed"`) {
		t.Errorf("dry run without the box: want 25 selected, 5 left out as replayed, and the box offered:\n%s", body)
	}
	_, body = b.post(t, "/replay/dry-run", operatorSecret, url.Values{"source": {"beta"}, "include_replayed": {"1"}})
	if !strings.Contains(body, `id="dry-selected">30<`) || !strings.Contains(body, `name="include_replayed" value="1">`) {
		t.Errorf("dry run with the box ticked: want 30 selected and the choice carried to the replay form:\n%s", body)
	}
}

// The dry run writes the audit trail, so it is a POST under the console's
// CSRF protection: a GET, a link another site could plant, changes
// nothing.
func TestDryRunIsAPostUnderCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if code, _ := b.get(t, "/replay?source=beta", operatorSecret); code == http.StatusOK {
		t.Errorf("GET /replay?source=beta: %d; want it refused", code)
	}
	if code, _ := b.get(t, "/replay/dry-run?source=beta", operatorSecret); code == http.StatusOK {
		t.Errorf("GET /replay/dry-run?source=beta: %d; want it refused", code)
	}
	session := sessionOf(t, b.signInForm(t, operatorSecret, "", nil))
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/replay/dry-run", strings.NewReader(url.Values{"source": {"beta"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(session)
	if code, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("cookie POST without the synchronizer token: %d; want 403", code)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit`); n != 0 {
		t.Fatalf("%d audit rows after a GET and a forged POST; want 0", n)
	}
	if code, _ := b.post(t, "/replay/dry-run", operatorSecret, url.Values{"source": {"beta"}}); code != http.StatusOK {
		t.Errorf("bearer POST: %d; want 200", code)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'dry_run'`); n != 1 {
		t.Errorf("%d dry-run audit rows; want 1", n)
	}
}
