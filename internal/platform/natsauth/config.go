package natsauth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// User is one entry of the server's users list.
type User struct {
	// Role names the user and sets its permissions.
	Role Role
	// Password is the literal password; when empty the configuration
	// reads it from the server's environment variable Role.PasswordVar().
	Password string
}

// TLS is the server side of TLS, as files on the server's machine.
type TLS struct {
	// Cert and Key are the server's certificate and private key.
	Cert, Key string
	// CA verifies client certificates; with it every client must present
	// one signed by this CA.
	CA string
}

// ServerConfig is what Sluice needs in a nats-server configuration file
// beyond the command line: max_payload, the users, and TLS when set.
type ServerConfig struct {
	// Users are the server's users, usually every role (see UsersFromEnv
	// and UsersWith). A server with no users would accept anyone, so
	// Render always writes the authorization block.
	Users []User
	// TLS, when not nil, makes the server require TLS.
	TLS *TLS
	// Monitor is the host:port of the monitoring endpoint (/healthz,
	// /varz), empty for none. A port given on the command line (-m)
	// keeps this host.
	Monitor string
}

// UsersFromEnv lists every role with its password read from the server's
// environment: the shipped configuration.
func UsersFromEnv() []User {
	var out []User
	for _, r := range Roles() {
		out = append(out, User{Role: r})
	}
	return out
}

// UsersWith lists every role with the literal password password(role).
func UsersWith(password func(Role) string) []User {
	var out []User
	for _, r := range Roles() {
		out = append(out, User{Role: r, Password: password(r)})
	}
	return out
}

// Render writes the configuration in nats-server's format. Subjects are
// quoted, so "$JS.API.…" is never read as a variable; a password left to
// the environment is an unquoted $VARIABLE, which the server resolves
// from its environment at start and refuses to start without.
func (c ServerConfig) Render() string {
	var b strings.Builder
	// max_payload has no command-line flag; it equals every stream's
	// MaxMsgSize, so a message the server lets through is one the stream
	// stores.
	fmt.Fprintf(&b, "max_payload: %d\n", broker.MaxPayload)
	if c.Monitor != "" {
		fmt.Fprintf(&b, "http: %s\n", strconv.Quote(c.Monitor))
	}
	if c.TLS != nil {
		b.WriteString("\ntls {\n")
		fmt.Fprintf(&b, "  cert_file: %s\n  key_file: %s\n", strconv.Quote(c.TLS.Cert), strconv.Quote(c.TLS.Key))
		if c.TLS.CA != "" {
			fmt.Fprintf(&b, "  ca_file: %s\n  verify: true\n", strconv.Quote(c.TLS.CA))
		}
		b.WriteString("}\n")
	}
	b.WriteString("\nauthorization {\n  users = [\n")
	for _, u := range c.Users {
		password := "$" + u.Role.PasswordVar()
		if u.Password != "" {
			password = strconv.Quote(u.Password)
		}
		p := For(u.Role)
		fmt.Fprintf(&b, "    {\n      user: %s\n      password: %s\n      permissions: {\n", strconv.Quote(string(u.Role)), password)
		fmt.Fprintf(&b, "        publish: { allow: %s }\n", list(p.Publish))
		fmt.Fprintf(&b, "        subscribe: { allow: %s }\n", list(p.Subscribe))
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

func list(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
