package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/console"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// A dead letter an operator replay marked is dispatched wherever it is
// shown or selected: in dlq ls and dlq show (table and JSON), on the
// console's list and detail pages, and by the replay filter. Before the
// mark it is ready everywhere.
func TestDispatchedDeadLetterReadsTheSameEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	hash, err := messages.ContentHash("some text", nil)
	if err != nil {
		t.Fatal(err)
	}
	job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID("wiki", "a.md"), ChunkCount: 1, DocVersion: 1,
		SourceID: "wiki", SourceNativeID: "a.md", RunID: "r1", ContentHash: hash, Text: "some text", PublishedAt: time.Now()}
	payload, err := job.Encode()
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(-time.Minute)
	dl := messages.DeadLetter{Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(job.DocID, 0),
		DocID: job.DocID, DocVersion: 1, SourceID: "wiki", SourceNativeID: "a.md", Disposition: messages.DispositionRetry,
		ErrorClass: classify.ClassTransientExhausted, Stage: "embed", Attempts: 3, FailedAt: time.Now().Add(-time.Hour),
		NextRetryAt: &due, Payload: payload}
	if _, _, err := deadletter.Record(ctx, db.Pool, dl, 1); err != nil {
		t.Fatal(err)
	}
	web := newConsole(t, db)
	assertStateEverywhere(t, db, web, dl.DeadLetterID, deadletter.StateReady)

	// As Execute does: mark, then dispatch.
	if err := deadletter.MarkReplayed(ctx, db.Pool, "rp-test", []string{dl.DeadLetterID}); err != nil {
		t.Fatal(err)
	}
	assertStateEverywhere(t, db, web, dl.DeadLetterID, deadletter.StateDispatched)
}

// assertStateEverywhere checks that dead letter id, the only one in db,
// is in state want in every place that shows or selects a state.
func assertStateEverywhere(t *testing.T, db *testenv.Database, web *httptest.Server, id string, want deadletter.State) {
	t.Helper()
	env := map[string]string{"DATABASE_URL": db.URL}
	human := strings.ReplaceAll(string(want), "_", " ")

	var list struct {
		DeadLetters []struct {
			ID    string `json:"dead_letter_id"`
			State string `json:"state"`
		} `json:"dead_letters"`
	}
	sluiceDecode(t, env, &list, "dlq", "ls")
	if len(list.DeadLetters) != 1 || list.DeadLetters[0].ID != id || list.DeadLetters[0].State != string(want) {
		t.Errorf("dlq ls --json: %+v; want %s in state %s", list.DeadLetters, id, want)
	}
	code, out, errOut := sluice(t, env, "dlq", "ls")
	if code != 0 {
		t.Fatalf("dlq ls: exit %d, %s", code, errOut)
	}
	if f := rowFields(t, out, id+" "); !strings.Contains(strings.Join(f, " "), " "+human+" ") {
		t.Errorf("dlq ls row %q: want state %s", f, human)
	}

	var show struct {
		State string `json:"state"`
	}
	sluiceDecode(t, env, &show, "dlq", "show", id)
	if show.State != string(want) {
		t.Errorf("dlq show --json: state %q; want %s", show.State, want)
	}
	if code, out, errOut = sluice(t, env, "dlq", "show", id); code != 0 {
		t.Fatalf("dlq show: exit %d, %s", code, errOut)
	}
	if got := strings.Join(rowFields(t, out, "state "), " "); got != "state "+human {
		t.Errorf("dlq show state row %q; want %q", got, "state "+human)
	}

	if page := consoleGet(t, web, "/dead-letters/"+url.PathEscape(id)); !strings.Contains(page, `<td id="state">`+human+`</td>`) {
		t.Errorf("console detail of %s: want state %s in\n%s", id, human, page)
	}
	for _, s := range deadletter.States {
		page := consoleGet(t, web, "/dead-letters?state="+string(s))
		if listed := strings.Contains(page, `href="/dead-letters/`+id+`"`); listed != (s == want) {
			t.Errorf("console list filtered by state %s lists %s: %v; want %v", s, id, listed, s == want)
		}
		if s == want {
			if cells := rowCells(page, id); !strings.Contains(cells, "<td>"+human) {
				t.Errorf("console list row of %s: %q; want state %s", id, cells, human)
			}
		}
		found, _, err := deadletter.List(context.Background(), db.Pool, deadletter.Filter{State: s}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if selected := len(found) == 1; selected != (s == want) {
			t.Errorf("replay filter state %s selects %d; want it to select %s only in state %s", s, len(found), id, want)
		}
	}
}

// operatorSecret signs the test console's requests in.
const operatorSecret = "operator-secret-0123456789"

// newConsole serves the console over db, connected as its own role.
func newConsole(t *testing.T, db *testenv.Database) *httptest.Server {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), db.RoleURL(migrations.ConsoleRole))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	srv, err := console.New(console.Config{Addr: "127.0.0.1:0",
		Tokens: []console.Token{{Principal: "ops", Role: console.Operator, Secret: operatorSecret}}}, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(web.Close)
	return web
}

// consoleGet fetches path as the operator and returns the page.
func consoleGet(t *testing.T, web *httptest.Server, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, web.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body.String())
	}
	return body.String()
}

// rowCells returns the table row of the list page that links to id.
func rowCells(page, id string) string {
	at := strings.Index(page, `href="/dead-letters/`+id+`"`)
	if at < 0 {
		return ""
	}
	start := strings.LastIndex(page[:at], "<tr>")
	end := strings.Index(page[at:], "</tr>")
	if start < 0 || end < 0 {
		return ""
	}
	return page[start : at+end]
}
