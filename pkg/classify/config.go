package classify

import (
	"errors"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Classes of a misconfiguration: a setting that names the wrong server
// or carries credentials it will not take. No wait clears one, so a
// process that meets one stops at once and names the setting to fix.
const (
	// ClassBrokerAuth: NATS rejected the user, password or credentials
	// file, or denied a subject the process needs.
	ClassBrokerAuth = "broker_auth"
	// ClassBrokerRefused: nothing listens where NATS_URL points.
	ClassBrokerRefused = "broker_refused"
	// ClassBrokerWrongServer: what answers where NATS_URL points is not a
	// NATS server with JetStream: another service on that port, or NATS
	// without JetStream or headers.
	ClassBrokerWrongServer = "broker_wrong_server"
	// ClassDatabaseAuth: PostgreSQL rejected the user or password
	// (SQLSTATE class 28).
	ClassDatabaseAuth = "database_auth"
	// ClassDatabaseMissing: the database named does not exist (SQLSTATE
	// 3D000).
	ClassDatabaseMissing = "database_missing"
	// ClassDatabasePrivilege: the role lacks a privilege the process needs
	// (SQLSTATE 42501).
	ClassDatabasePrivilege = "database_privilege"
	// ClassDatabaseRefused: nothing listens where DATABASE_URL points.
	ClassDatabaseRefused = "database_refused"
)

// wrongServer is implemented by an error that knows the server it
// reached is not the kind it was configured to reach, such as a
// connection that was accepted but never greeted as NATS greets.
type wrongServer interface {
	error
	WrongServer() bool
}

// Misconfigured reports whether err is a misconfiguration whenever it
// happens, and its class:
//
//   - nats.ErrAuthorization, ErrAuthExpired, ErrAuthRevoked or
//     ErrAccountAuthExpired, or nats.ErrPermissionViolation:
//     broker_auth.
//   - nats.ErrNoInfoReceived or ErrHeadersNotSupported,
//     jetstream.ErrJetStreamNotEnabled or ErrJetStreamNotEnabledForAccount,
//     or an error whose WrongServer method reports true:
//     broker_wrong_server.
//   - A *pgconn.PgError of SQLSTATE class 28 (28000, 28P01):
//     database_auth; 3D000: database_missing; 42501: database_privilege.
//
// A refused connection is not among them: once a process has started, it
// is an outage to wait out. See AtStartup.
func Misconfigured(err error) (class string, ok bool) {
	if err == nil {
		return "", false
	}
	for _, target := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked,
		nats.ErrAccountAuthExpired, nats.ErrPermissionViolation} {
		if errors.Is(err, target) {
			return ClassBrokerAuth, true
		}
	}
	for _, target := range []error{nats.ErrNoInfoReceived, nats.ErrHeadersNotSupported,
		jetstream.ErrJetStreamNotEnabled, jetstream.ErrJetStreamNotEnabledForAccount} {
		if errors.Is(err, target) {
			return ClassBrokerWrongServer, true
		}
	}
	if ws, ok := errors.AsType[wrongServer](err); ok && ws.WrongServer() {
		return ClassBrokerWrongServer, true
	}
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch {
		case len(e.Code) == 5 && e.Code[:2] == "28":
			return ClassDatabaseAuth, true
		case e.Code == "3D000":
			return ClassDatabaseMissing, true
		case e.Code == "42501":
			return ClassDatabasePrivilege, true
		}
	}
	return "", false
}

// AtStartup reports whether err, met while a process first connects to
// its dependencies, is a misconfiguration, and its class: whatever
// Misconfigured says, and a refused connection — nothing listens at the
// address — which is database_refused inside a *pgconn.ConnectError and
// broker_refused otherwise. A process that meets one has nothing to
// wait for: the address is wrong or the server is not started.
func AtStartup(err error) (class string, ok bool) {
	if class, ok := Misconfigured(err); ok {
		return class, true
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return "", false
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return ClassDatabaseRefused, true
	}
	return ClassBrokerRefused, true
}
