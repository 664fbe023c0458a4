package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// shared holds the servers one test binary shares: one environment and one
// PostgreSQL server, on which every test gets its own database.
var shared struct {
	envOnce sync.Once
	env     *localenv.Env
	envErr  error

	pg       lazyServer // DefaultBackend
	pgvector lazyServer // PgvectorBackend

	tplMu     sync.Mutex
	templates map[templateKey]string

	// externalNATS serialises tests on a NATS_URL server, where every test
	// would otherwise see the others' streams.
	externalNATS sync.Mutex
}

// Main runs the tests and then stops the shared servers. Use it from
// TestMain: func TestMain(m *testing.M) { testenv.Main(m) }. Without it the
// servers still die with the test binary and the watchdog removes their
// files; Main only makes that prompt.
func Main(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: cleanup:", err)
		}
	}
	os.Exit(code)
}

func sharedEnv(t testing.TB) *localenv.Env {
	t.Helper()
	shared.envOnce.Do(func() { shared.env, shared.envErr = localenv.New() })
	if shared.envErr != nil {
		t.Fatalf("testenv: %v", shared.envErr)
	}
	return shared.env
}

// privateEnv is an environment owned by one test and closed with it.
func privateEnv(t testing.TB) *localenv.Env {
	t.Helper()
	env, err := localenv.New()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("testenv: cleanup: %v", err)
		}
	})
	return env
}

// Database is a migrated database that belongs to one test.
type Database struct {
	// URL connects to the database as a superuser, the schema's owner.
	URL string
	// Name is the database name.
	Name string
	// Pool is a connection pool on it, closed when the test ends.
	Pool *pgxpool.Pool
}

// DBOption adjusts NewDatabase.
type DBOption func(*dbOptions)

type dbOptions struct {
	dims    int
	pg      *Postgres
	backend Backend
}

// WithDims sets the embedding dimension the database is migrated for.
func WithDims(dims int) DBOption { return func(o *dbOptions) { o.dims = dims } }

// OnServer creates the database on pg (for example a private server from
// NewPostgres) instead of the shared one.
func OnServer(pg *Postgres) DBOption { return func(o *dbOptions) { o.pg = pg } }

// NewDatabase gives the test a fresh database cloned from a migrated
// template, dropped when the test ends.
func NewDatabase(t testing.TB, opts ...DBOption) *Database {
	t.Helper()
	o := dbOptions{dims: migrations.DefaultDims}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg := o.pg
	if pg == nil {
		pg = sharedServer(t, o.backend)
	}
	tpl, err := template(ctx, pg, o.dims)
	if err != nil {
		t.Fatalf("testenv: migrated template: %v", err)
	}
	name := "t_" + randomSuffix()
	if err := localenv.AdminExec(ctx, pg.URL, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tpl)); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	db := &Database{URL: withDatabase(pg.URL, name), Name: name}
	// The pool registers the vector store's types, as the services' do
	// (service.Start), so that every test writes vectors as they do.
	pcfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	pcfg.AfterConnect = vectorstore.RegisterTypes
	db.Pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatalf("testenv: connect %s: %v", name, err)
	}
	if o.backend == PgvectorBackend {
		requirePgvector(ctx, t, db)
	}
	t.Cleanup(func() {
		db.Pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The server may be down if a crash test left it so; the database
		// then goes with the server's temporary directory.
		_ = localenv.AdminExec(ctx, pg.URL, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return db
}

// RoleURL connects to the database as role, one of migrations.Roles:
// what the service that role is for connects as, granted only what its
// statements need (migrations/00020_service_roles.sql).
func (db *Database) RoleURL(role string) string { return localenv.AsRole(db.URL, role) }

// RolePool is a pool on the database as role, with the vector store's
// types registered as the services' pools have them; it is closed when the
// test ends. In-process services use it to run as their own role.
func (db *Database) RolePool(t testing.TB, role string) *pgxpool.Pool {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(db.RoleURL(role))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	pcfg.AfterConnect = vectorstore.RegisterTypes
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatalf("testenv: connect as %s: %v", role, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// lazyServer is a server that one test binary shares, started by the
// first test that asks for it.
type lazyServer struct {
	once sync.Once
	pg   *Postgres
	err  error
}

// get starts the server with start on first use and fails t if it could
// not be started, now or on first use.
func (l *lazyServer) get(t testing.TB, start func(context.Context) (*Postgres, error)) *Postgres {
	t.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		l.pg, l.err = start(ctx)
	})
	if l.err != nil {
		t.Fatalf("testenv: %v", l.err)
	}
	return l.pg
}

// templateKey names one server's migrated template for one dimension.
type templateKey struct {
	pg   *Postgres
	dims int
}

// template returns the name of a database on pg migrated for dims,
// creating it on first use in this process.
func template(ctx context.Context, pg *Postgres, dims int) (string, error) {
	shared.tplMu.Lock()
	defer shared.tplMu.Unlock()
	// Keyed by server, not URL: a private server started after another
	// stopped can reuse its port, and so its URL.
	key := templateKey{pg: pg, dims: dims}
	if name, ok := shared.templates[key]; ok {
		return name, nil
	}
	name := fmt.Sprintf("sluice_tpl_%d", dims)
	// A template left by an earlier run on an external server may be stale.
	if err := localenv.AdminExec(ctx, pg.URL, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return "", err
	}
	if err := localenv.AdminExec(ctx, pg.URL, `CREATE DATABASE `+name); err != nil {
		return "", err
	}
	if err := migrations.Up(ctx, withDatabase(pg.URL, name), migrations.Options{Dims: dims}); err != nil {
		return "", err
	}
	if err := localenv.AllowRoleLogins(ctx, pg.URL); err != nil {
		return "", err
	}
	if shared.templates == nil {
		shared.templates = map[templateKey]string{}
	}
	shared.templates[key] = name
	return name, nil
}

// withDatabase replaces the database name in a postgres:// URL.
func withDatabase(url, name string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	q := ""
	if i := strings.IndexByte(url, '?'); i >= 0 {
		q = url[i:]
	}
	user := cfg.User
	if cfg.Password != "" {
		user += ":" + cfg.Password
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s%s", user, cfg.Host, cfg.Port, name, q)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewPostgres starts a PostgreSQL server private to the test — one it can
// StopImmediate and Restart — and stops it when the test ends.
func NewPostgres(t testing.TB) *Postgres {
	t.Helper()
	return newPrivatePostgres(t, localPostgres)
}

// newPrivatePostgres starts a server with start in an environment private
// to t.
func newPrivatePostgres(t testing.TB, start func(context.Context, *localenv.Env) (*Postgres, error)) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := start(ctx, privateEnv(t))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return pg
}

// NewNATS gives the test a JetStream server no other test sees: a private
// local nats-server (which the test may Kill and Restart) that requires a
// user per role (NATS.URL is the owner's, NATS.URLFor a service's), or,
// when NATS_URL is set, that server with every stream deleted and other
// tests of this binary held off until the test ends. WithTLS makes the
// private server require TLS too.
func NewNATS(t testing.TB, opts ...NATSOption) *NATS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if url := os.Getenv("NATS_URL"); url != "" {
		shared.externalNATS.Lock()
		t.Cleanup(shared.externalNATS.Unlock)
		n := localenv.AttachNATS(url)
		if err := deleteAllStreams(ctx, n); err != nil {
			t.Fatalf("testenv: reset streams on NATS_URL=%s: %v", config.Redact(url), err)
		}
		return n
	}
	n, err := localNATS(ctx, privateEnv(t), opts...)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return n
}

func deleteAllStreams(ctx context.Context, n *NATS) error {
	nc, err := n.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	names := js.StreamNames(ctx)
	var all []string
	for name := range names.Name() {
		all = append(all, name)
	}
	if err := names.Err(); err != nil {
		return err
	}
	for _, name := range all {
		if err := js.DeleteStream(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// NewJetStream gives the test a private JetStream server (see NewNATS), a
// connection to it as the topology owner closed when the test ends, and
// topo declared on it.
func NewJetStream(t testing.TB, topo broker.Topology, opts ...NATSOption) (*NATS, jetstream.JetStream) {
	t.Helper()
	n := NewNATS(t, opts...)
	nc, js, err := broker.Connect(n.ConnConfig(natsauth.Owner, t.Name()), zerolog.Nop())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := broker.Ensure(ctx, js, topo); err != nil {
		t.Fatalf("testenv: declare topology: %v", err)
	}
	return n, js
}
