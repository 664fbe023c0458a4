package localenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a running PostgreSQL server. A local one can be stopped the
// hard way and restarted on the same data directory; one given by URL or
// run in a container (AttachPostgres) supports only Close.
type Postgres struct {
	// URL connects as a superuser to the "postgres" database.
	URL string
	// TLS is set when the server accepts TLS connections only
	// (WithPostgresTLS): CA is the certificate authority that signed the
	// server's certificate, which URL names as sslrootcert. The server
	// asks for no client certificate, so Cert and Key are empty.
	TLS *TLSFiles

	srv     *server
	dataDir string
}

// AttachPostgres is the server at url, which this process does not run:
// Close calls stop, when given, and the crash helpers return ErrNotLocal.
func AttachPostgres(url string, stop func(ctx context.Context) error) *Postgres {
	return &Postgres{URL: url, srv: attached("postgres", stop)}
}

// postgresBinDir finds the directory holding initdb and postgres: the one on
// PATH first, then the newest Debian-style /usr/lib/postgresql/N/bin.
func postgresBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found: " +
		"install them (Debian: apt-get install postgresql) or put them on PATH")
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// serviceUser returns the credential to run PostgreSQL under: initdb and
// postgres refuse to run as root, so root runs them as "postgres".
func serviceUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and no 'postgres' user to run PostgreSQL as (create one, or run as a normal user): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// PostgresOption adjusts a server StartLocalPostgres starts.
type PostgresOption func(*postgresOptions)

type postgresOptions struct{ tls bool }

// WithPostgresTLS makes the server accept TLS connections only, with
// scram-sha-256 passwords: ssl=on with a certificate for 127.0.0.1 and
// localhost signed by a CA generated for it, and a pg_hba.conf whose only
// accepting line is hostssl (see tlsHBA). The superuser gets a random
// password; Postgres.URL carries it with sslmode=verify-full and
// sslrootcert naming the CA, and Postgres.TLS holds the CA.
func WithPostgresTLS() PostgresOption { return func(o *postgresOptions) { o.tls = true } }

// tlsHBA is the pg_hba.conf of a WithPostgresTLS server: a password over
// TLS from loopback, and an explicit refusal of any connection without
// TLS. The server listens on no Unix socket, so no local line is needed.
const tlsHBA = `# TYPE    DATABASE  USER  ADDRESS       METHOD
hostssl   all       all   127.0.0.1/32  scram-sha-256
hostnossl all       all   all           reject
`

// StartLocalPostgres initialises a throwaway cluster under dir and starts it
// on a free loopback port. The server is tuned for tests: fsync is off (the
// data survives a process crash, which is what crash tests exercise, but not
// an OS crash), while synchronous_commit stays on so a committed row is in
// the WAL before the commit returns. Without options it trusts every
// loopback connection, TLS or not.
func StartLocalPostgres(ctx context.Context, dir string, opts ...PostgresOption) (*Postgres, error) {
	var o postgresOptions
	for _, opt := range opts {
		opt(&o)
	}
	binDir, err := postgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serviceUser()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(dir, "pgdata")
	password, err := initCluster(ctx, binDir, dir, dataDir, o.tls, cred)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	pg := &Postgres{
		URL:     fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		dataDir: dataDir,
		srv: &server{cmd: Command{
			Name:  "postgres",
			Path:  filepath.Join(binDir, "postgres"),
			Args:  append(serverSettings(dataDir, port), "-c", "unix_socket_directories="),
			Log:   filepath.Join(dir, "postgres.log"),
			Group: true,
			Cred:  cred,
		}},
	}
	if o.tls {
		if err := pg.requireTLS(dir, port, password, cred); err != nil {
			return nil, err
		}
	}
	if err := pg.Start(ctx); err != nil {
		return nil, err
	}
	return pg, nil
}

// initCluster runs initdb into dataDir under dir as cred, with a generated
// superuser password when withPassword is set, which it returns.
func initCluster(ctx context.Context, binDir, dir, dataDir string, withPassword bool, cred *syscall.Credential) (password string, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	for _, d := range []string{dir, dataDir} {
		if err := chown(d, cred); err != nil {
			return "", err
		}
	}
	initArgs := []string{"-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"}
	if withPassword {
		password = randomPassword()
		pwfile := filepath.Join(dir, "superuser-password")
		if err := writeOwned(pwfile, []byte(password+"\n"), cred); err != nil {
			return "", err
		}
		defer os.Remove(pwfile)
		initArgs = append(initArgs, "--pwfile="+pwfile)
	}
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), initArgs...)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return password, nil
}

// requireTLS writes the server's certificate and a TLS-only pg_hba.conf
// into the cluster under dir, turns ssl on, and points p.URL at port over
// TLS as the superuser with password.
func (p *Postgres) requireTLS(dir string, port int, password string, cred *syscall.Credential) error {
	tlsDir := filepath.Join(dir, "tls")
	client, server, err := WriteTLSFiles(tlsDir)
	if err != nil {
		return err
	}
	// PostgreSQL refuses a key file that others may read, and must own
	// it: the files stay 0600 and go to the server's user.
	for _, path := range []string{tlsDir, server.Cert, server.Key} {
		if err := chown(path, cred); err != nil {
			return err
		}
	}
	if err := writeOwned(filepath.Join(p.dataDir, "pg_hba.conf"), []byte(tlsHBA), cred); err != nil {
		return err
	}
	p.srv.cmd.Args = append(p.srv.cmd.Args, "-c", "ssl=on", "-c", "ssl_cert_file="+server.Cert, "-c", "ssl_key_file="+server.Key)
	p.TLS = &TLSFiles{CA: client.CA}
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password),
		Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/postgres",
		RawQuery: url.Values{"sslmode": {"verify-full"}, "sslrootcert": {client.CA}}.Encode()}
	p.URL = u.String()
	return nil
}

// writeOwned writes a file only its owner may read, owned by cred's user
// when cred is set.
func writeOwned(path string, data []byte, cred *syscall.Credential) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	return chown(path, cred)
}

// chown gives path to cred's user; a nil cred leaves it alone.
func chown(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("chown %s to postgres: %w", path, err)
	}
	return nil
}

// serverSettings are the postgres arguments every throwaway server runs
// with: loopback only, fsync off, room for parallel tests.
func serverSettings(dataDir string, port int) []string {
	return []string{
		"-D", dataDir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB",
		"-c", "log_min_messages=warning",
	}
}

// Start starts a stopped server on its data directory and waits until it
// accepts connections (crash recovery included).
func (p *Postgres) Start(ctx context.Context) error {
	proc, err := p.srv.start()
	if err != nil {
		return err
	}
	return proc.WaitReady(60*time.Second, func() error { return ping(ctx, p.URL) })
}

// StopImmediate stops the server the way `pg_ctl stop -m immediate` does:
// SIGQUIT, no checkpoint, crash recovery on the next start.
func (p *Postgres) StopImmediate(ctx context.Context) error {
	return p.srv.signal(syscall.SIGQUIT, 30*time.Second)
}

// Restart is StopImmediate followed by Start on the same data.
func (p *Postgres) Restart(ctx context.Context) error {
	if err := p.StopImmediate(ctx); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Close shuts the server down fast (SIGINT), for cleanup.
func (p *Postgres) Close() error { return p.srv.close(syscall.SIGINT, 15*time.Second) }

func ping(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}
