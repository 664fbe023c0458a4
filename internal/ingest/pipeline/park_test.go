package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
)

// parkedTotal sums sluice_parked_total in reg.
func parkedTotal(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() == "sluice_parked_total" {
			for _, m := range f.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// A park whose transaction rolls back (here, the dead letter's outbox
// row is refused after its insert) leaves no count and no log line of a
// park; once the park commits, both are there.
func TestParkCountedOnlyOnceCommitted(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	ctx := context.Background()
	if _, err := b.db.Pool.Exec(ctx, `
		CREATE FUNCTION refuse_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			RAISE EXCEPTION 'outbox row refused' USING ERRCODE = 'check_violation';
		END $$;
		CREATE TRIGGER refuse_outbox AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION refuse_outbox();`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var logs testenv.Buffer
	p, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Pool: b.db.Pool, Store: b.store, Embedder: b.client(),
		Log: zerolog.New(&logs), Metrics: pipeline.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	undecodable := func() []*pipeline.Job {
		return []*pipeline.Job{{Raw: []byte("not a chunk job"), MsgID: "d:0:1", Delivered: 1}}
	}

	if err := p.Process(ctx, undecodable()); err == nil {
		t.Fatal("process with the outbox refusing rows: no error; want the park's failure")
	}
	if n := parkedTotal(t, reg); n != 0 {
		t.Errorf("sluice_parked_total is %v after a park that rolled back; want 0", n)
	}
	if strings.Contains(logs.String(), "chunk parked") {
		t.Errorf("a park that rolled back was logged: %s", logs.String())
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("%d outbox rows after the rollback", n)
	}

	if _, err := b.db.Pool.Exec(ctx, `DROP TRIGGER refuse_outbox ON outbox`); err != nil {
		t.Fatal(err)
	}
	b.process(p, undecodable())
	if n := parkedTotal(t, reg); n != 1 {
		t.Errorf("sluice_parked_total is %v after a committed park; want 1", n)
	}
	if !strings.Contains(logs.String(), "chunk parked") {
		t.Errorf("a committed park was not logged: %s", logs.String())
	}
}
