package bulk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	testModel = "text-embedding-3-small"
	testDims  = 8
)

// phases are the simulated batch's phases; a round of converge moves the
// clock by a fraction of them.
func phases() embedsim.BatchConfig {
	return embedsim.BatchConfig{Validating: time.Minute, InProgress: 10 * time.Minute, Finalizing: time.Minute, Cancelling: time.Minute}
}

type testBundle struct {
	ctx    context.Context
	db     *testenv.Database
	pool   *pgxpool.Pool // as sluice_consumer, who runs the ledger
	owner  *pgxpool.Pool
	sim    *embedsim.Server
	clock  *clocktest.Clock
	client *batchapi.Client
	cfg    bulk.Config
	reg    *prometheus.Registry
	deps   bulk.Deps
	ledger *bulk.Ledger
	// readmit makes the test Requeuer admit owed members to a new batch;
	// otherwise it only records them.
	readmit bool
}

// setup starts embed-sim on a hand-moved clock and gives the test a
// migrated database with the tables its Applier and Requeuer write.
func setup(t *testing.T, sim embedsim.Config, cfg bulk.Config) *testBundle {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	sim.Dims = testDims
	if sim.Batch == (embedsim.BatchConfig{}) {
		sim.Batch = phases()
	}
	s := embedsim.StartTest(t, sim, embedsim.WithClock(clock.Now))
	client, err := batchapi.New(batchapi.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.NewDatabase(t)
	if _, err := db.Pool.Exec(t.Context(), `
		CREATE TABLE test_vectors (
			doc_id text, chunk_index int, version bigint, vector real[], error_class text,
			changes int NOT NULL DEFAULT 1, updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
			PRIMARY KEY (doc_id, chunk_index));
		CREATE TABLE test_handed (kind text, batch_id bigint, custom_id text, cause text);
		GRANT SELECT, INSERT, UPDATE ON test_vectors, test_handed TO sluice_consumer`); err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Dims = testModel, testDims
	if cfg.MaxAge == 0 {
		cfg.MaxAge = time.Minute
	}
	reg := prometheus.NewRegistry()
	tb := &testBundle{ctx: t.Context(), db: db, pool: db.RolePool(t, migrations.ConsumerRole), owner: db.Pool,
		sim: s, clock: clock, client: client, cfg: cfg, reg: reg,
		deps: bulk.Deps{Now: clock.Now, Metrics: bulk.NewMetrics(reg)}, readmit: true}
	tb.ledger, err = bulk.NewLedger(cfg, tb.deps)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// tableApplier stores results as the pipeline would: behind a version
// guard, so an older or equal version changes nothing; and records every
// result it was handed.
type tableApplier struct{}

func (tableApplier) Apply(ctx context.Context, tx pgx.Tx, results []bulk.Result) error {
	for _, r := range results {
		var class *string
		kind := "applied"
		if r.Err != nil {
			class, kind = &r.Decision.Class, "parked"
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO test_vectors (doc_id, chunk_index, version, vector, error_class) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (doc_id, chunk_index) DO UPDATE
			SET version = excluded.version, vector = excluded.vector, error_class = excluded.error_class,
			    changes = test_vectors.changes + 1, updated_at = clock_timestamp()
			WHERE test_vectors.version < excluded.version`,
			r.Member.DocID, r.Member.ChunkIndex, r.Member.Version, r.Vector, class); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO test_handed (kind, batch_id, custom_id) VALUES ($1, $2, $3)`,
			kind, r.Member.BatchID, r.Member.CustomID); err != nil {
			return err
		}
	}
	return nil
}

// requeuer records owed members and, when tb.readmit, admits them to a
// new batch in the same transaction.
type requeuer struct{ tb *testBundle }

func (q requeuer) Requeue(ctx context.Context, tx pgx.Tx, owed []bulk.Owed) error {
	members := make([]bulk.Member, len(owed))
	for i, o := range owed {
		if _, err := tx.Exec(ctx, `INSERT INTO test_handed (kind, batch_id, custom_id, cause) VALUES ('requeued', $1, $2, $3)`,
			o.Member.BatchID, o.Member.CustomID, o.Cause.Error()); err != nil {
			return err
		}
		members[i] = o.Member
	}
	if !q.tb.readmit {
		return nil
	}
	return q.tb.ledger.Admit(ctx, tx, members)
}

func (tb *testBundle) builder(t *testing.T, crash func(string) error) *bulk.Builder {
	t.Helper()
	deps := tb.deps
	deps.Crash = crash
	b, err := bulk.NewBuilder(tb.pool, tb.client, tb.cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (tb *testBundle) poller(t *testing.T, crash func(string) error) *bulk.Poller {
	t.Helper()
	deps := tb.deps
	deps.Crash = crash
	p, err := bulk.NewPoller(tb.pool, tb.client, tableApplier{}, requeuer{tb}, tb.cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// member is chunk i of a generated document of source.
func member(source string, i int, text string) bulk.Member {
	return bulk.Member{SourceID: source, DocID: fmt.Sprintf("%s-doc-%03d", source, i/4), ChunkIndex: i % 4, Version: 1,
		ContentHash: fmt.Sprintf("h%d", i), Text: text}
}

// corpus is n members of source, the ith of which reads text(i).
func corpus(source string, n int, text func(i int) string) []bulk.Member {
	ms := make([]bulk.Member, n)
	for i := range ms {
		ms[i] = member(source, i, text(i))
	}
	return ms
}

func plain(i int) string { return fmt.Sprintf("chunk %d of a corpus about rivers and sluices", i) }

// other is plain's text for another source: no chunk of it shares a text
// with plain's.
func other(i int) string { return fmt.Sprintf("chunk %d of a corpus about canals and locks", i) }

// admit records members in one transaction, as a consumer would before
// acknowledging their messages.
func (tb *testBundle) admit(t *testing.T, members []bulk.Member) {
	t.Helper()
	if err := pgx.BeginFunc(tb.ctx, tb.pool, func(tx pgx.Tx) error { return tb.ledger.Admit(tb.ctx, tx, members) }); err != nil {
		t.Fatal(err)
	}
}

// errCrash stands for a kill at a crash point.
var errCrash = errors.New("killed at a crash point")

// crashAt returns a crash hook that fails at point the first time it is
// reached, and whether it was.
func crashAt(point string) (func(string) error, *bool) {
	hit := new(bool)
	return func(p string) error {
		if p == point && !*hit {
			*hit = true
			return errCrash
		}
		return nil
	}, hit
}

// round is one turn of the services: seal what is due, build, poll, and
// let the provider's time pass.
func (tb *testBundle) round(t *testing.T, b *bulk.Builder, p *bulk.Poller) {
	t.Helper()
	tb.clock.Advance(tb.cfg.MaxAge)
	if err := b.Pass(tb.ctx); err != nil {
		t.Fatalf("builder: %v", err)
	}
	if err := p.Pass(tb.ctx); err != nil {
		t.Fatalf("poller: %v", err)
	}
	tb.clock.Advance(4 * time.Minute)
}

// converge runs rounds until every member is settled and every batch
// ended, failing the test after a bounded number.
func (tb *testBundle) converge(t *testing.T, b *bulk.Builder, p *bulk.Poller) int {
	t.Helper()
	for i := 1; i <= 60; i++ {
		tb.round(t, b, p)
		if tb.quiet(t) {
			return i
		}
	}
	t.Fatalf("not quiet after 60 rounds: batches %v, members %v", tb.batchStates(t), tb.memberStates(t))
	return 0
}

// quiet reports whether nothing is pending and every batch is settled.
func (tb *testBundle) quiet(t *testing.T) bool {
	t.Helper()
	var busy int
	if err := tb.owner.QueryRow(tb.ctx, `
		SELECT (SELECT count(*) FROM bulk_members WHERE state = 'pending')
		     + (SELECT count(*) FROM bulk_batches WHERE state NOT IN ('applied', 'requeued'))`).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	return busy == 0
}

func (tb *testBundle) counts(t *testing.T, sql string, args ...any) map[string]int {
	t.Helper()
	rows, err := tb.owner.Query(tb.ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (tb *testBundle) batchStates(t *testing.T) map[string]int {
	return tb.counts(t, `SELECT state, count(*) FROM bulk_batches GROUP BY state`)
}

func (tb *testBundle) memberStates(t *testing.T) map[string]int {
	return tb.counts(t, `SELECT state, count(*) FROM bulk_members GROUP BY state`)
}

// outcomes is, per chunk version admitted, how it ended in the test's
// store: "stored", the parked class, or "missing".
func (tb *testBundle) outcomes(t *testing.T, members []bulk.Member) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range members {
		var class *string
		var hasVector bool
		err := tb.owner.QueryRow(tb.ctx, `SELECT error_class, vector IS NOT NULL FROM test_vectors WHERE doc_id = $1 AND chunk_index = $2 AND version = $3`,
			m.DocID, m.ChunkIndex, m.Version).Scan(&class, &hasVector)
		key := fmt.Sprintf("%s:%d", m.DocID, m.ChunkIndex)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			out[key] = "missing"
		case err != nil:
			t.Fatal(err)
		case class != nil:
			out[key] = *class
		case hasVector:
			out[key] = "stored"
		}
	}
	return out
}

// handedTwice lists the custom ids handed to the Applier more than once.
func (tb *testBundle) handedTwice(t *testing.T) map[string]int {
	return tb.counts(t, `SELECT custom_id, count(*) FROM test_handed WHERE kind <> 'requeued' GROUP BY custom_id HAVING count(*) > 1`)
}

// providerBatches counts the provider's batches by the ledger id in their
// metadata.
func (tb *testBundle) providerBatches(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	after := ""
	for {
		page, err := tb.client.ListBatches(tb.ctx, batchapi.ListParams{Limit: 100, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Data {
			out[b.Metadata[bulk.MetaBatch]]++
		}
		if !page.HasMore {
			return out
		}
		after = page.LastID
	}
}

// metric reads one series of a counter or gauge vector on tb's
// registry, by its label's value.
func (tb *testBundle) metric(t *testing.T, name, label string) float64 {
	t.Helper()
	mfs, err := tb.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() != label {
					continue
				}
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}

// state is the ledger state of batch id.
func (tb *testBundle) state(t *testing.T, id int64) string {
	t.Helper()
	var st string
	if err := tb.owner.QueryRow(tb.ctx, `SELECT state FROM bulk_batches WHERE batch_id = $1`, id).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// providerID is the provider's id of batch id, "" before it is created.
func (tb *testBundle) providerID(t *testing.T, id int64) string {
	t.Helper()
	var pid string
	if err := tb.owner.QueryRow(tb.ctx, `SELECT coalesce(provider_batch_id, '') FROM bulk_batches WHERE batch_id = $1`, id).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// mustBegin begins a transaction on tb's pool, rolled back when the test
// ends.
func mustBegin(t *testing.T, tb *testBundle) pgx.Tx {
	t.Helper()
	tx, err := tb.pool.Begin(tb.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}
