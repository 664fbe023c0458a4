package cli_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/console"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/migrations"
)

// batchRunSecret is the console operator's token in batchRun.
const batchRunSecret = "operator-secret-0123456789"

// batchRun is one bulk batch of source wiki sent to embed-sim, on a
// hand-moved clock, by the ledger's own builder and poller: the batch
// the CLI and the console then report on.
type batchRun struct {
	ctx     context.Context
	db      *testenv.Database
	pool    *pgxpool.Pool // as sluice_consumer, who runs the ledger
	sim     *embedsim.Server
	client  *batchapi.Client
	clock   *clocktest.Clock
	cfg     bulk.Config
	deps    bulk.Deps
	builder *bulk.Builder
	poller  *bulk.Poller
}

// discard takes the results and owed members of a batch and keeps none:
// the ledger settles its members all the same.
type discard struct{}

func (discard) Apply(context.Context, pgx.Tx, []bulk.Result) error { return nil }
func (discard) Requeue(context.Context, pgx.Tx, []bulk.Owed) error { return nil }

// startBatchRun starts embed-sim with faults on its batches and admits
// members chunks of wiki to the ledger.
func startBatchRun(t *testing.T, faults embedsim.BatchFaults, members int) *batchRun {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 8, Batch: embedsim.BatchConfig{Validating: time.Minute, InProgress: 10 * time.Minute,
		Finalizing: time.Minute, Cancelling: time.Minute, Window: time.Hour, Faults: faults}}, embedsim.WithClock(clock.Now))
	client, err := batchapi.New(batchapi.Config{URL: sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.NewDatabase(t)
	r := &batchRun{ctx: t.Context(), db: db, pool: db.RolePool(t, migrations.ConsumerRole), sim: sim, client: client, clock: clock,
		cfg: bulk.Config{Model: sim.Model(), Dims: 8, MaxAge: time.Minute}, deps: bulk.Deps{Now: clock.Now}}
	ledger, err := bulk.NewLedger(r.cfg, r.deps)
	if err != nil {
		t.Fatal(err)
	}
	if r.builder, err = bulk.NewBuilder(r.pool, client, r.cfg, r.deps); err != nil {
		t.Fatal(err)
	}
	if r.poller, err = bulk.NewPoller(r.pool, client, discard{}, discard{}, r.cfg, r.deps); err != nil {
		t.Fatal(err)
	}
	ms := make([]bulk.Member, members)
	for i := range ms {
		ms[i] = bulk.Member{SourceID: "wiki", DocID: fmt.Sprintf("doc-%03d", i), Version: 1, ContentHash: fmt.Sprintf("h%d", i),
			Text: fmt.Sprintf("chunk %d of a corpus about rivers and sluices", i)}
	}
	if err := pgx.BeginFunc(r.ctx, r.pool, func(tx pgx.Tx) error { return ledger.Admit(r.ctx, tx, ms) }); err != nil {
		t.Fatal(err)
	}
	return r
}

// round seals what is due, sends it, follows what the provider has, and
// lets the provider's time pass.
func (r *batchRun) round(t *testing.T) {
	t.Helper()
	r.clock.Advance(r.cfg.MaxAge)
	if err := r.builder.Pass(r.ctx); err != nil {
		t.Fatalf("builder: %v", err)
	}
	if err := r.poller.Pass(r.ctx); err != nil {
		t.Fatalf("poller: %v", err)
	}
	r.clock.Advance(4 * time.Minute)
}

// until runs rounds until cond holds of the ledger's batch 1, or fails
// the test.
func (r *batchRun) until(t *testing.T, what string, cond func(state, provider string) bool) {
	t.Helper()
	for range 40 {
		r.round(t)
		var state, provider string
		if err := r.db.Pool.QueryRow(r.ctx, `SELECT state, coalesce(provider_batch_id, '') FROM bulk_batches WHERE batch_id = 1`).
			Scan(&state, &provider); err != nil {
			t.Fatal(err)
		}
		if cond(state, provider) {
			return
		}
	}
	t.Fatalf("batch 1 never %s", what)
}

// settled runs rounds until batch 1 is settled.
func (r *batchRun) settled(t *testing.T) {
	t.Helper()
	r.until(t, "settled", func(state, _ string) bool { return state == "applied" || state == "requeued" })
}

// env is the CLI's environment, as the operator's role.
func (r *batchRun) env() map[string]string {
	return map[string]string{"DATABASE_URL": r.db.RoleURL(migrations.OperatorRole)}
}

// consoleOutcome is the outcome cell of batch id on the console's
// Batches page, as an operator reads it.
func (r *batchRun) consoleOutcome(t *testing.T, id int64) string {
	t.Helper()
	pool := r.db.RolePool(t, migrations.ConsoleRole)
	srv, err := console.New(console.Config{Addr: "127.0.0.1:0",
		Tokens: []console.Token{{Principal: "ops-alice", Role: console.Operator, Secret: batchRunSecret}}}, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, hs.URL+"/batches", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+batchRunSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /batches: %d, %v\n%s", resp.StatusCode, err, body)
	}
	m := regexp.MustCompile(fmt.Sprintf(`<tr id="batch-%d">.*?<td class="outcome">([^<]*)</td>`, id)).FindSubmatch(body)
	if m == nil {
		t.Fatalf("GET /batches has no outcome cell for batch %d:\n%s", id, body)
	}
	return string(m[1])
}
