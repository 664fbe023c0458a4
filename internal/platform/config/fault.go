package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/classify"
)

// SettingError is a setting that names the wrong server or carries
// credentials it will not take: no wait clears it, so the process stops
// and says which setting to fix and how.
type SettingError struct {
	// Setting is the environment variable to fix: DATABASE_URL, NATS_URL
	// or NATS_CREDS.
	Setting string
	// Value is the setting's value, its credentials redacted.
	Value string
	// Class is pkg/classify's class of the fault, such as database_auth.
	Class string
	// Fix says what to do.
	Fix string
	// Err is what the server or the client said.
	Err error
}

// Error implements error.
func (e *SettingError) Error() string {
	return fmt.Sprintf("%s %s: %v; %s", e.Setting, e.Value, e.Err, e.Fix)
}

// Unwrap returns what the server or the client said.
func (e *SettingError) Unwrap() error { return e.Err }

// Fault returns err as a *SettingError when pkg/classify calls it a
// misconfiguration: classify.AtStartup's when startup is true (a refused
// connection included), classify.Misconfigured's otherwise. Any other
// error, nil included, is returned unchanged. binary is the process's
// name (producer, consumer, outbox-relay, dlq-replayer, sluice), whose
// own PostgreSQL role and NATS user the fix names.
func (c Common) Fault(binary string, err error, startup bool) error {
	class, ok := classify.Misconfigured(err)
	if startup {
		class, ok = classify.AtStartup(err)
	}
	if !ok {
		return err
	}
	return c.settingError(binary, class, err)
}

// PrivilegeFault is the *SettingError of a PostgreSQL user that lacks
// the privileges of binary's role, which cause says.
func (c Common) PrivilegeFault(binary string, cause error) *SettingError {
	return c.settingError(binary, classify.ClassDatabasePrivilege, cause)
}

// settingError names the setting behind a misconfiguration of the given
// class, and how to fix it.
func (c Common) settingError(binary, class string, err error) *SettingError {
	e := &SettingError{Setting: "DATABASE_URL", Value: Redact(c.DatabaseURL), Class: class, Err: err}
	dbUser, dbName := UserOf(c.DatabaseURL), databaseName(c.DatabaseURL)
	natsUser := UserOf(c.NATSURL)
	switch class {
	case classify.ClassDatabaseRefused:
		e.Fix = "nothing listens at that host and port: start PostgreSQL there, or fix the host and port in DATABASE_URL"
	case classify.ClassDatabaseAuth:
		e.Fix = fmt.Sprintf("PostgreSQL rejected user %q or its password: put the role's password in DATABASE_URL%s", dbUser, passwordSource(dbUser))
	case classify.ClassDatabaseMissing:
		e.Fix = fmt.Sprintf("database %q does not exist: fix its name in DATABASE_URL, or create it and run sluice migrate", dbName)
	case classify.ClassDatabasePrivilege:
		e.Fix = fmt.Sprintf("user %q lacks a privilege %s needs: connect as %s, whose grants sluice migrate keeps (or GRANT %s TO %s), and run sluice migrate if the schema is older than this build",
			dbUser, binary, roleOf(binary), roleOf(binary), orPlaceholder(dbUser))
	case classify.ClassBrokerRefused:
		e.Setting, e.Value = "NATS_URL", Redact(c.NATSURL)
		e.Fix = "nothing listens at that host and port: start NATS there, or fix the host and port in NATS_URL (the client port, 4222 by default)"
	case classify.ClassBrokerWrongServer:
		e.Setting, e.Value = "NATS_URL", Redact(c.NATSURL)
		e.Fix = "what answers there is not a NATS server with JetStream: point NATS_URL at a NATS client port (4222 by default) of a server started with JetStream"
	case classify.ClassBrokerAuth:
		e.Setting, e.Value = "NATS_URL", Redact(c.NATSURL)
		e.Fix = fmt.Sprintf("NATS rejected user %q or denied it a subject %s needs: connect as %s's own NATS user with the password the server has for it, nats://USER:PASSWORD@host:4222 (deploy/nats/nats.conf reads it from NATS_<USER>_PASSWORD)",
			natsUser, binary, binary)
		if c.NATSCreds != "" {
			e.Setting, e.Value = "NATS_CREDS", c.NATSCreds
			e.Fix = fmt.Sprintf("NATS rejected the credentials file or denied its user a subject %s needs: give NATS_CREDS the credentials of %s's own user", binary, binary)
		}
	}
	return e
}

// databaseName is the database a PostgreSQL URL names.
func databaseName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// passwordSource says where a deployment keeps the password of a
// PostgreSQL role sluice migrate manages.
func passwordSource(user string) string {
	for _, r := range migrations.Roles {
		if r.Name == user {
			return fmt.Sprintf(" as sluice migrate set it from %s", r.PasswordEnv)
		}
	}
	return ""
}

// roleOf is the PostgreSQL role of a binary, or a description of it.
func roleOf(binary string) string {
	if role, err := migrations.RoleForBinary(binary); err == nil {
		return role
	}
	return "the process's own role"
}

func orPlaceholder(user string) string {
	if user == "" {
		return "USER"
	}
	return user
}

// UserOf is the user named in the first URL of a server list, empty for
// none.
func UserOf(servers string) string {
	first, _, _ := strings.Cut(servers, ",")
	u, err := url.Parse(strings.TrimSpace(first))
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}
