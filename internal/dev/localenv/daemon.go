package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// InitPostgres makes dir a PostgreSQL data directory, with initdb, unless
// it is one already: a server that keeps its data across restarts starts
// on it with PostgresCommand. Local connections are trusted, as in every
// server this package starts.
func InitPostgres(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "PG_VERSION")); err == nil {
		return nil
	}
	binDir, err := postgresBinDir()
	if err != nil {
		return err
	}
	cred, err := serviceUser()
	if err != nil {
		return err
	}
	_, err = initCluster(ctx, binDir, dir, filepath.Join(dir, "pgdata"), false, cred)
	return err
}

// PostgresCommand is the command that serves the data directory
// InitPostgres made under dir on port, listening on loopback only, with
// the durability settings PostgreSQL ships with (fsync on): data meant to
// be kept.
func PostgresCommand(dir string, port int) (Command, error) {
	binDir, err := postgresBinDir()
	if err != nil {
		return Command{}, err
	}
	cred, err := serviceUser()
	if err != nil {
		return Command{}, err
	}
	return Command{
		Name: "postgres",
		Path: filepath.Join(binDir, "postgres"),
		Args: []string{"-D", filepath.Join(dir, "pgdata"), "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=200"},
		Log:  filepath.Join(dir, "postgres.log"),
		Cred: cred,
	}, nil
}

// PostgresURL connects as the superuser to database on the local server
// at port.
func PostgresURL(port int, database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, database)
}

// PingPostgres is a readiness check: it succeeds once url accepts a
// connection.
func PingPostgres(ctx context.Context, url string) error { return ping(ctx, url) }

// Alive reports whether the process pid exists.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// StopPID stops the detached process group led by pid: sig, then SIGKILL
// after grace. A process that is gone already is no error.
func StopPID(pid int, sig syscall.Signal, grace time.Duration) error {
	if !Alive(pid) {
		return nil
	}
	_ = syscall.Kill(-pid, sig)
	if Poll(grace, func() bool { return !Alive(pid) }) {
		return nil
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if Poll(killWait, func() bool { return !Alive(pid) }) {
		return fmt.Errorf("pid %d ignored %s for %s: %w", pid, sig, grace, ErrKilled)
	}
	return fmt.Errorf("pid %d did not exit after SIGKILL", pid)
}

// FreePort is a TCP port free on loopback now.
func FreePort() (int, error) { return freePort() }
