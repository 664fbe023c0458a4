package localenv_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// A server started WithPostgresTLS serves its URL over verified TLS and
// nothing else: a connection without TLS is refused by pg_hba.conf, one
// that trusts another CA fails on the certificate, and one with a wrong
// password is refused over TLS too.
func TestPostgresWithTLSAcceptsOnlyVerifiedTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := localenv.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	pg, err := env.LocalPostgres(ctx, localenv.WithPostgresTLS())
	if err != nil {
		t.Fatal(err)
	}
	if pg.TLS == nil || pg.TLS.CA == "" {
		t.Fatalf("WithPostgresTLS gave no CA: %+v", pg.TLS)
	}

	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatalf("connect over TLS: %v", err)
	}
	var ssl bool
	err = conn.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl)
	conn.Close(ctx)
	if err != nil || !ssl {
		t.Fatalf("the server reports ssl=%v for its own URL's session (err %v)", ssl, err)
	}

	_, err = pgx.Connect(ctx, strings.Replace(pg.URL, "sslmode=verify-full", "sslmode=disable", 1))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "28000" || !strings.Contains(pgErr.Message, "no encryption") {
		t.Errorf("a connection without TLS: want pg_hba.conf's refusal (28000, no encryption), got %v", err)
	}

	otherCA, _, err := localenv.WriteTLSFiles(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = pgx.Connect(ctx, strings.Replace(pg.URL, url.QueryEscape(pg.TLS.CA), url.QueryEscape(otherCA.CA), 1))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("verify-full against another CA: want x509.UnknownAuthorityError, got %v", err)
	}

	u, _ := url.Parse(pg.URL)
	u.User = url.UserPassword("postgres", "not-the-password")
	_, err = pgx.Connect(ctx, u.String())
	if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Errorf("a wrong password over TLS: want 28P01, got %v", err)
	}
}
