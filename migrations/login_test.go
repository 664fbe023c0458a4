package migrations_test

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
)

// sqlRecorder keeps every statement a connection sends, with its
// arguments, as a server's statement log would.
type sqlRecorder struct {
	mu   sync.Mutex
	sent []string
}

func (r *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, d.SQL)
	for _, a := range d.Args {
		if s, ok := a.(string); ok {
			r.sent = append(r.sent, s)
		}
	}
	return ctx
}

func (r *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Setting a role's login sends a SCRAM verifier, never the password: no
// statement or argument holds it, and the role then logs in with it.
func TestSetLoginNeverSendsThePassword(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sqlRecorder{}
	cfg.Tracer = rec
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	const password = "Correct-Horse-7-battery"
	if err := migrations.SetLogin(t.Context(), conn, migrations.ReadonlyRole, password); err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.sent {
		if strings.Contains(s, password) {
			t.Fatalf("the password reached the server in %q", s)
		}
	}
	// The test servers trust every login, so the stored verifier is
	// checked against the password as the server would check it.
	var stored string
	if err := conn.QueryRow(t.Context(), `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, migrations.ReadonlyRole).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !scramMatches(t, stored, password) {
		t.Fatalf("the stored verifier %q does not match the password", stored)
	}
	if scramMatches(t, stored, password+"x") {
		t.Fatal("the stored verifier matches a wrong password")
	}
}

// scramMatches reports whether a SCRAM-SHA-256 verifier as PostgreSQL
// stores it was made from password.
func scramMatches(t *testing.T, verifier, password string) bool {
	t.Helper()
	var iter int
	var salt64, stored64, server64 string
	fields := strings.FieldsFunc(verifier, func(r rune) bool { return r == '$' || r == ':' })
	if len(fields) != 5 || fields[0] != "SCRAM-SHA-256" {
		t.Fatalf("not a SCRAM-SHA-256 verifier: %q", verifier)
	}
	if _, err := fmt.Sscan(fields[1], &iter); err != nil {
		t.Fatal(err)
	}
	salt64, stored64, server64 = fields[2], fields[3], fields[4]
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(msg string) []byte {
		h := hmac.New(sha256.New, salted)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	storedKey := sha256.Sum256(mac("Client Key"))
	return base64.StdEncoding.EncodeToString(storedKey[:]) == stored64 &&
		base64.StdEncoding.EncodeToString(mac("Server Key")) == server64
}

// A password the verifier cannot be sure to match is refused, and the
// role is left as it was.
func TestSetLoginRefusesWhatItCannotHash(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	conn, err := pgx.Connect(t.Context(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, pw := range []string{"", "pässword", "tab\there"} {
		if err := migrations.SetLogin(t.Context(), conn, migrations.ReadonlyRole, pw); err == nil {
			t.Errorf("SetLogin(%q) gave no error", pw)
		}
	}
}
