package producer_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// A source with a records schema in the policy file reads each row of
// its CSV and spreadsheet files as a document of its own, under the id
// column, with the metadata columns; a row missing a required field is
// parked alone as missing_required_field with its row and field, and
// the other rows and files go on. A second run of the same files
// records nothing new.
func TestProducerReadsRecordsUnderTheSourcesSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	nats, _ := testenv.NewJetStream(t, broker.Topology{})
	dir := formatTree(t, "people.csv", "people.xlsx")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("Plain notes stay one document.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("sources:\n  people:\n    records: {id: id, text: [name, bio], metadata: [team], required: [name]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lookup := serviceEnv(db, nats, map[string]string{"CHUNK_UNIT": "chars", "POLICY_FILE": policyFile})
	run := func() string {
		var stdout, stderr testenv.Buffer
		if err := producer.Run(ctx, []string{"--source", "people", dir}, lookup, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("producer: %v\n%s", err, stderr.String())
		}
		return stdout.String()
	}
	run()

	type doc struct{ team, text string }
	got := map[string]doc{}
	rows, err := db.Pool.Query(ctx, `
		SELECT d.source_native_id, coalesce(d.metadata->>'team', ''), convert_from(m.job, 'UTF8')::jsonb->>'text'
		FROM documents d JOIN ingest_manifest m USING (doc_id) WHERE d.source_id = 'people' AND m.status = 'pending'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var native string
		var d doc
		if err := rows.Scan(&native, &d.team, &d.text); err != nil {
			t.Fatal(err)
		}
		got[native] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"people.csv", "people.xlsx"} {
		for id, want := range map[string]doc{"1": {"engines", "Ada\n\nWrote the first program."}, "2": {"compilers", "Grace\n\nBuilt the first compiler."}} {
			if d := got[file+"#"+id]; d != want {
				t.Errorf("%s#%s: %+v, want %+v", file, id, d, want)
			}
		}
		if d, ok := got[file+"#3"]; ok {
			t.Errorf("%s#3 has no name but was recorded: %+v", file, d)
		}
	}
	if d := got["notes.txt"]; !strings.Contains(d.text, "Plain notes") {
		t.Errorf("notes.txt: %+v, want it read as one text document", d)
	}
	if len(got) != 5 {
		t.Errorf("%d documents with chunks, want 2 rows of each file and the notes: %v", len(got), got)
	}

	for _, file := range []string{"people.csv", "people.xlsx"} {
		var raw []byte
		if err := db.Pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE payload->>'source_native_id' = $1`, file+"#row-4").Scan(&raw); err != nil {
			t.Fatalf("%s row 4: no dead letter: %v", file, err)
		}
		dl, err := messages.DecodeDeadLetter(raw)
		if err != nil {
			t.Fatal(err)
		}
		if dl.ErrorClass != classify.ClassMissingRequiredField || !strings.Contains(dl.ErrorDetail, `row 4: field "name"`) {
			t.Errorf("%s row 4: dead letter %s: %q; want missing_required_field naming row 4 and the name field", file, dl.ErrorClass, dl.ErrorDetail)
		}
	}

	var docs, parked int
	count := func() {
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM documents WHERE source_id = 'people'`).Scan(&docs); err != nil {
			t.Fatal(err)
		}
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE payload->>'source_id' = 'people'`).Scan(&parked); err != nil {
			t.Fatal(err)
		}
	}
	count()
	firstDocs, firstParked := docs, parked
	run()
	count()
	if docs != firstDocs || parked != firstParked {
		t.Errorf("a second run of the same files: %d documents and %d dead letters, want %d and %d", docs, parked, firstDocs, firstParked)
	}
}

// serviceEnv is the environment of a producer run as the producer role
// against db and nats, with extra settings.
func serviceEnv(db *testenv.Database, nats *testenv.NATS, extra map[string]string) func(string) (string, bool) {
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.ProducerRole), "METRICS_ADDR": "", "LOG_FORMAT": "json"}
	for _, kv := range nats.Env(natsauth.Producer) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	maps.Copy(env, extra)
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}
