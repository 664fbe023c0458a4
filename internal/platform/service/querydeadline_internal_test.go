package service

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/netfault"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A statement on a connection that goes silent — PostgreSQL behind a
// blackhole, so no error and no answer ever arrives — returns a deadline
// error after the SQL timeout instead of waiting for the connection.
func TestBoundSQLOnSilentConnection(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netfault.New(t).Proxy("postgres", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	pcfg, err := pgxpool.ParseConfig(strings.Replace(db.URL, u.Host, proxy.Addr, 1))
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 500 * time.Millisecond
	var logs testenv.Buffer
	boundSQL(pcfg, timeout, zerolog.New(&logs))
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Connecting is bounded by the same timeout, which a loaded machine
	// can exceed; the pool dials again on the next call, as a service's
	// would, so the test retries until one connection is up.
	var timeoutSetting string
	deadline := time.Now().Add(15 * time.Second)
	for {
		err = pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&timeoutSetting)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || timeoutSetting != "500ms" {
		t.Fatalf("statement_timeout = %q (%v), want 500ms", timeoutSetting, err)
	}
	if err := proxy.Inject(netfault.Blackhole()); err != nil {
		t.Fatal(err)
	}
	// The outer bound only keeps a broken bound from hanging the test.
	outer, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = pool.Exec(outer, `SELECT 1`)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || took > timeout+2*time.Second {
		t.Fatalf("statement on a silent connection: %v after %s, want a deadline error after about %s", err, took, timeout)
	}
	if !strings.Contains(logs.String(), "sql deadline fired") {
		t.Fatalf("the fired deadline was not logged; log:\n%s", logs.String())
	}
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
}
