package localenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// pgvectorBinDir is where Debian's postgresql-17 package puts initdb and
// postgres, inside the root.
const pgvectorBinDir = "/usr/lib/postgresql/17/bin"

// PgvectorRoot returns the directory of the cached Debian trixie root that
// holds PostgreSQL 17 and pgvector 0.8:
// ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/trixie-pg17. `make pgvector-root`
// builds it (internal/dev/localenv/pgvector-root.sh) and `make test-deploy`
// reuses it, so the path is a contract.
func PgvectorRoot() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate the pgvector root: %w", err)
	}
	return filepath.Join(cache, "sluice", "trixie-pg17"), nil
}

// errNoPgvectorRoot is what a missing root reports; the message says how to
// build one.
var errNoPgvectorRoot = errors.New("no PostgreSQL 17 + pgvector root: run `make pgvector-root` (as root) to build it")

// openPgvectorRoot checks that root is a complete pgvector root that this
// process can chroot into. It holds a shared lock on <root>.lock while it
// looks, so a build in progress is waited for rather than seen half done.
func openPgvectorRoot(root string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the pgvector root %s is started with chroot, which needs root: run as root", root)
	}
	if lock, err := os.Open(root + ".lock"); err == nil {
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
			return fmt.Errorf("lock %s.lock: %w", root, err)
		}
		defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	}
	for _, bin := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(root, pgvectorBinDir, bin)); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w (%s lacks %s)", errNoPgvectorRoot, root, filepath.Join(pgvectorBinDir, bin))
		} else if err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(root, "usr/share/postgresql/17/extension/vector.control")); err != nil {
		return fmt.Errorf("%s has PostgreSQL 17 but not pgvector (%w): remove it and run `make pgvector-root`", root, err)
	}
	return nil
}

// rootUser returns the credential of the postgres user as the root's own
// /etc/passwd defines it; the machine's may differ or be missing.
func rootUser(root string) (*syscall.Credential, error) {
	f, err := os.Open(filepath.Join(root, "etc/passwd"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 4 || fields[0] != "postgres" {
			continue
		}
		uid, uerr := strconv.Atoi(fields[2])
		gid, gerr := strconv.Atoi(fields[3])
		if uerr != nil || gerr != nil {
			break
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s/etc/passwd has no postgres user: the root is incomplete; remove it and run `make pgvector-root`", root)
}

// StartChrootPostgres initialises a throwaway PostgreSQL 17 cluster inside
// the pgvector root and starts it there with chroot, as the root's postgres
// user, on a free loopback port, tuned like StartLocalPostgres.
// The cluster lives in a fresh directory under the root's /tmp, removed by
// the returned cleanup or, if the process dies first, by a watchdog.
func StartChrootPostgres(ctx context.Context, root string) (*Postgres, func() error, error) {
	if err := openPgvectorRoot(root); err != nil {
		return nil, nil, err
	}
	cred, err := rootUser(root)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(filepath.Join(root, "tmp"), "sluice-pg-")
	if err != nil {
		return nil, nil, err
	}
	if err := startWatchdog(dir); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	pg, err := startChrootPostgres(ctx, root, dir, cred)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return pg, cleanup, nil
}

func startChrootPostgres(ctx context.Context, root, dir string, cred *syscall.Credential) (*Postgres, error) {
	// Paths as the chrooted server sees them.
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	inside := "/" + rel
	dataDir := filepath.Join(inside, "pgdata")
	if err := os.Mkdir(filepath.Join(dir, "pgdata"), 0o700); err != nil {
		return nil, err
	}
	for _, d := range []string{dir, filepath.Join(dir, "pgdata")} {
		if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s to the root's postgres user: %w", d, err)
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "HOME=" + inside}
	initdb := exec.CommandContext(ctx, filepath.Join(pgvectorBinDir, "initdb"),
		"-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Env = env
	initdb.Dir = inside
	initdb.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %w\n%s", root, err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	pg := &Postgres{
		URL:     fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		dataDir: filepath.Join(dir, "pgdata"),
		srv: &server{cmd: Command{
			Name:   "postgres (pgvector)",
			Path:   filepath.Join(pgvectorBinDir, "postgres"),
			Chroot: root,
			Group:  true,
			Args: append(serverSettings(dataDir, port),
				"-c", "unix_socket_directories="+inside,
				// The root has no /proc or /dev/shm mounted.
				"-c", "dynamic_shared_memory_type=mmap",
				"-c", "huge_pages=off",
			),
			Env:  env,
			Log:  filepath.Join(dir, "postgres.log"),
			Cred: cred,
		}},
	}
	if err := pg.Start(ctx); err != nil {
		return nil, err
	}
	return pg, nil
}
