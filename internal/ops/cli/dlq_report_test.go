package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/messages"
)

// dlRow is a dead_letters row to seed. Times are relative to the
// seeding moment; zero durations take defaults.
type dlRow struct {
	id, source, nativeID, class, disposition, run string
	attempts, gen                                 int
	firstAgo, lastAgo                             time.Duration
	retryIn                                       *time.Duration // next_retry_at = now + retryIn; nil for none
	replayedAgo                                   *time.Duration
	resolved                                      bool
	payload                                       []byte
}

func dlDur(d time.Duration) *time.Duration { return &d }

// seedDLRows inserts rows and returns the instant they are relative to.
func seedDLRows(t *testing.T, pool *pgxpool.Pool, dls ...dlRow) time.Time {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	at := func(d *time.Duration, sign time.Duration) *time.Time {
		if d == nil {
			return nil
		}
		v := now.Add(sign * *d)
		return &v
	}
	for i, d := range dls {
		if d.attempts == 0 {
			d.attempts = 1
		}
		if d.disposition == "" {
			d.disposition = messages.DispositionQuarantine
		}
		if d.firstAgo == 0 {
			d.firstAgo = d.lastAgo
		}
		if d.nativeID == "" {
			d.nativeID = d.id + ".txt"
		}
		var resolvedAt *time.Time
		if d.resolved {
			resolvedAt = &now
		}
		var run *string
		if d.run != "" {
			run = &d.run
		}
		_, err := pool.Exec(context.Background(), `
			INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id,
			    run_id, disposition, error_class, stage, attempts, replay_gen, payload, last_outbox_id,
			    first_failed_at, last_failed_at, next_retry_at, replayed_at, resolved_at)
			VALUES ($1, $2, 0, 1, $3, $4, $5, $6, $7, 'embed', $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			d.id, "doc_"+d.id, d.source, d.nativeID, run, d.disposition, d.class, d.attempts, d.gen, d.payload, i+1,
			now.Add(-d.firstAgo), now.Add(-d.lastAgo), at(d.retryIn, 1), at(d.replayedAgo, -1), resolvedAt)
		if err != nil {
			t.Fatalf("seed dead letter %s: %v", d.id, err)
		}
	}
	return now
}

// sluiceDecode runs a command that must succeed and decodes its stdout.
func sluiceDecode(t *testing.T, env map[string]string, into any, args ...string) {
	t.Helper()
	code, out, errOut := sluice(t, env, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("sluice %v: exit %d, stderr %q", args, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("sluice %v --json: %v\n%s", args, err, out)
	}
}

// rowFields returns the whitespace-separated fields of the first line of
// out that starts with prefix.
func rowFields(t *testing.T, out, prefix string) []string {
	t.Helper()
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return strings.Fields(line)
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, out)
	return nil
}

// seedRunRow inserts a running ingest run started startedAgo. counters are
// its documents, published, stored and parked, 0 when left out.
func seedRunRow(t *testing.T, pool *pgxpool.Pool, runID, source string, startedAgo time.Duration, counters ...int) {
	t.Helper()
	var c [4]int
	copy(c[:], counters)
	_, err := pool.Exec(context.Background(), `
		INSERT INTO ingest_runs (run_id, source_id, started_at, status, documents, published, stored, parked)
		VALUES ($1, $2, $3, 'running', $4, $5, $6, $7)`,
		runID, source, time.Now().Add(-startedAgo), c[0], c[1], c[2], c[3])
	if err != nil {
		t.Fatalf("seed run %s: %v", runID, err)
	}
}

// reportOut is the part of dlq report --json the tests read.
type reportOut struct {
	Total      int `json:"total"`
	Unresolved int `json:"unresolved"`
	Shape      struct {
		Code    string   `json:"code"`
		Label   string   `json:"label"`
		Source  string   `json:"source"`
		Spiking []string `json:"spiking_sources"`
	} `json:"shape"`
	ErrorClasses []string `json:"error_classes"`
	Sources      []struct {
		SourceID   string `json:"source_id"`
		Total      int    `json:"total"`
		Unresolved int    `json:"unresolved"`
		Cells      []struct {
			ErrorClass string `json:"error_class"`
			Count      int    `json:"count"`
			Examples   []struct {
				DeadLetterID   string `json:"dead_letter_id"`
				SourceNativeID string `json:"source_native_id"`
			} `json:"examples"`
		} `json:"cells"`
	} `json:"sources"`
}

func TestDLQReportSpikeInOneSource(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	// Four sources ran today; "news" changed and fails a lot, the others
	// trickle, "docs" not at all.
	for _, s := range []string{"wiki", "news", "mail", "docs"} {
		seedRunRow(t, db.Pool, "run-"+s, s, 6*time.Hour)
	}
	dls := []dlRow{
		{id: "w1", source: "wiki", class: "bad_request", lastAgo: time.Hour},
		{id: "w2", source: "wiki", class: "empty_text", lastAgo: 2 * time.Hour, resolved: true},
		{id: "m1", source: "mail", class: "bad_request", lastAgo: 3 * time.Hour},
		{id: "old", source: "mail", class: "bad_request", lastAgo: 30 * time.Hour}, // outside the window
	}
	for i := range 25 {
		class := "invalid_encoding"
		if i >= 20 {
			class = "bad_request"
		}
		dls = append(dls, dlRow{id: fmt.Sprintf("n%02d", i), source: "news", class: class, lastAgo: time.Duration(i+1) * time.Minute})
	}
	seedDLRows(t, db.Pool, dls...)
	env := map[string]string{"DATABASE_URL": db.URL}

	var rep reportOut
	sluiceDecode(t, env, &rep, "dlq", "report")
	if rep.Total != 28 || rep.Unresolved != 27 || rep.Shape.Code != "one_source" || rep.Shape.Source != "news" ||
		rep.Shape.Label != "spike in one source (that source changed)" {
		t.Fatalf("total %d unresolved %d shape %+v; want 28, 27, one_source news", rep.Total, rep.Unresolved, rep.Shape)
	}
	if !slices.Equal(rep.ErrorClasses, []string{"invalid_encoding", "bad_request", "empty_text"}) {
		t.Errorf("columns %v", rep.ErrorClasses)
	}
	var rows []string
	for _, s := range rep.Sources {
		row := fmt.Sprintf("%s:%d/%d", s.SourceID, s.Total, s.Unresolved)
		for _, c := range s.Cells {
			row += fmt.Sprintf(" %s=%d", c.ErrorClass, c.Count)
		}
		rows = append(rows, row)
	}
	want := []string{"news:25/25 invalid_encoding=20 bad_request=5", "wiki:2/1 bad_request=1 empty_text=1", "mail:1/1 bad_request=1", "docs:0/0"}
	if !slices.Equal(rows, want) {
		t.Errorf("matrix\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	ex := rep.Sources[0].Cells[0].Examples
	if len(ex) != 3 || ex[0].DeadLetterID != "n00" || ex[2].DeadLetterID != "n02" || ex[0].SourceNativeID != "n00.txt" {
		t.Errorf("news examples %+v; want the 3 newest, n00 first", ex)
	}

	code, out, errOut := sluice(t, env, "dlq", "report")
	if code != 0 || !strings.Contains(out, "shape: spike in one source (that source changed)") || !strings.Contains(out, "news holds 25 of 28") {
		t.Errorf("text report: exit %d stderr %q\n%s", code, errOut, out)
	}
	if f := rowFields(t, out, "news "); !slices.Equal(f, []string{"news", "25", "25", "20", "5", "-"}) {
		t.Errorf("news row %q", f)
	}
}

// A provider outage parks a spike of exhausted transient failures in the
// one source that ran, beside its few poison chunks: the report reads the
// classes and names the provider, not the source.
func TestDLQReportProviderIncident(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	seedRunRow(t, db.Pool, "run-demo", "demo", time.Hour)
	dls := []dlRow{{id: "poison", source: "demo", class: "invalid_encoding", lastAgo: time.Minute}}
	for i := range 30 {
		class := "transient_exhausted"
		if i%3 == 0 {
			class = "timeout_exhausted"
		}
		dls = append(dls, dlRow{id: fmt.Sprintf("o%02d", i), source: "demo", class: class,
			disposition: messages.DispositionRetry, lastAgo: time.Duration(i+1) * time.Minute})
	}
	seedDLRows(t, db.Pool, dls...)
	var rep reportOut
	sluiceDecode(t, map[string]string{"DATABASE_URL": db.URL}, &rep, "dlq", "report")
	if rep.Total != 31 || rep.Shape.Code != "provider" || rep.Shape.Source != "" || !slices.Equal(rep.Shape.Spiking, []string{"demo"}) ||
		rep.Shape.Label != "provider incident (a spike of transient failures, not a source change)" {
		t.Errorf("total %d, shape %+v; want 31, a provider incident spiking in demo", rep.Total, rep.Shape)
	}
}

func TestDLQReportThresholdFlags(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	var rep reportOut
	sluiceDecode(t, env, &rep, "dlq", "report")
	if rep.Total != 0 || rep.Shape.Code != "quiet" || len(rep.Sources) != 0 {
		t.Errorf("empty DLQ: %+v; want quiet", rep)
	}
	for _, s := range []string{"a", "b", "c"} {
		seedRunRow(t, db.Pool, "run-"+s, s, time.Hour)
	}
	seedDLRows(t, db.Pool,
		dlRow{id: "a1", source: "a", class: "timeout", lastAgo: time.Minute},
		dlRow{id: "a2", source: "a", class: "timeout", lastAgo: time.Minute},
		dlRow{id: "b1", source: "b", class: "timeout", lastAgo: time.Minute},
		dlRow{id: "b2", source: "b", class: "timeout", lastAgo: time.Minute},
		dlRow{id: "c1", source: "c", class: "timeout", lastAgo: time.Minute},
	)
	for _, tc := range []struct {
		args []string
		code string
	}{
		{nil, "trickle"},
		{[]string{"--spike", "2"}, "every_source"},
		{[]string{"--spike", "2", "--every-source-share", "0.9"}, "mixed"},
		{[]string{"--spike", "2", "--one-source-share", "0.4"}, "one_source"},
		{[]string{"--since", "2h", "--until", "30m"}, "quiet"},
	} {
		sluiceDecode(t, env, &rep, append([]string{"dlq", "report"}, tc.args...)...)
		if rep.Shape.Code != tc.code {
			t.Errorf("report %v: shape %+v, want %s", tc.args, rep.Shape, tc.code)
		}
	}
	for _, args := range [][]string{{"--spike", "0"}, {"--one-source-share", "2"}, {"--since", "soon"}, {"--since", ""}} {
		code, _, errOut := sluice(t, env, append([]string{"dlq", "report"}, args...)...)
		if code != 2 {
			t.Errorf("report %v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}
