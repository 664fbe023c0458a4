package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// infra is the invocation's PostgreSQL and NATS: local servers that this
// process controls, so that their CPU time can be read from /proc.
type infra struct {
	env  *localenv.Env
	pg   *localenv.Postgres
	nats *localenv.NATS
	// syncNATS is a second server with sync_interval: always, started
	// for the first run that asks for it.
	syncNATS *localenv.NATS
}

func startInfra(ctx context.Context) (*infra, error) {
	env, err := localenv.New()
	if err != nil {
		return nil, err
	}
	in := &infra{env: env}
	if in.pg, err = env.LocalPostgres(ctx); err != nil {
		return nil, errors.Join(err, env.Close())
	}
	if in.nats, err = env.LocalNATS(ctx); err != nil {
		return nil, errors.Join(err, env.Close())
	}
	return in, nil
}

func (in *infra) close() error { return in.env.Close() }

// broker is the server a run uses: the default one, or with syncAlways
// the one that flushes every write before acknowledging it.
func (in *infra) broker(ctx context.Context, syncAlways bool) (*localenv.NATS, error) {
	if !syncAlways {
		return in.nats, nil
	}
	if in.syncNATS == nil {
		n, err := in.env.LocalNATS(ctx, localenv.WithSyncAlways())
		if err != nil {
			return nil, err
		}
		in.syncNATS = n
	}
	return in.syncNATS, nil
}

// topology is the broker topology the consumer service declares with its
// default settings; the benchmark declares the same so that its own
// workers (naive, ceilings) meet the same stream.
func topology() broker.Topology {
	return broker.Topology{MaxDeliveries: 5, AckWait: 60 * time.Second, MaxAckPending: 4096}
}

// freshBroker is broker with its streams declared anew.
func (in *infra) freshBroker(ctx context.Context, syncAlways bool) (*localenv.NATS, error) {
	n, err := in.broker(ctx, syncAlways)
	if err != nil {
		return nil, err
	}
	return n, in.resetStreams(ctx, n)
}

// resetStreams deletes the INGEST and DLQ streams and declares them anew,
// so that every run starts on an empty store and an empty dedupe window.
func (in *infra) resetStreams(ctx context.Context, n *localenv.NATS) error {
	nc, js, err := connect(n)
	if err != nil {
		return err
	}
	defer nc.Close()
	for _, name := range []string{broker.IngestStream, broker.DLQStream} {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("delete stream %s: %w", name, err)
		}
	}
	// A store just deleted can still be on its way out of the server's
	// directory; Ensure asks again while the server says so.
	return broker.Ensure(ctx, js, topology())
}

func connect(n *localenv.NATS) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(n.URL, nats.Name("sluice-bench"))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// database is one run's fresh database.
type database struct {
	name  string
	url   string
	pool  *pgxpool.Pool
	admin string // the URL of the server's maintenance database
}

// fresh is a run's fresh database, migrated for dims, and its broker
// with fresh streams (the server with sync_interval: always where
// syncAlways asks for it). The caller drops the database.
func (in *infra) fresh(ctx context.Context, dims int, syncAlways bool) (*database, *localenv.NATS, error) {
	db, err := in.freshDB(ctx, dims)
	if err != nil {
		return nil, nil, err
	}
	broker, err := in.freshBroker(ctx, syncAlways)
	if err != nil {
		return nil, nil, errors.Join(err, db.drop())
	}
	return db, broker, nil
}

// freshDB creates a database and migrates it for dims. Every run gets its
// own, so that no run pays for the rows, dead tuples or cache of another.
func (in *infra) freshDB(ctx context.Context, dims int) (*database, error) {
	return createDB(ctx, in.pg.URL, dims)
}

// createDB creates a database on the server at admin and migrates it for
// dims.
func createDB(ctx context.Context, admin string, dims int) (*database, error) {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	db := &database{name: "bench_" + hex.EncodeToString(b), admin: admin}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + db.name
	db.url = u.String()
	if err := localenv.AdminExec(ctx, admin, "CREATE DATABASE "+db.name); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	if err := migrations.Up(ctx, db.url, migrations.Options{Dims: dims, Log: io.Discard}); err != nil {
		return nil, errors.Join(err, db.drop())
	}
	pcfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		return nil, errors.Join(err, db.drop())
	}
	// The ceilings hold a connection per concurrent caller at once.
	pcfg.MaxConns = int32(concurrency) + 2
	// As the services' pools do (service.Start).
	pcfg.AfterConnect = vectorstore.RegisterTypes
	if db.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, errors.Join(err, db.drop())
	}
	return db, nil
}

// drop closes the pool and drops the database, whose rows would otherwise
// fill the disk over a long invocation.
func (db *database) drop() error {
	if db.pool != nil {
		db.pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return localenv.AdminExec(ctx, db.admin, "DROP DATABASE IF EXISTS "+db.name+" WITH (FORCE)")
}

// count runs a query returning one integer.
func (db *database) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, query, args...).Scan(&n)
	return n, err
}
