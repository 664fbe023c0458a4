package natsauth

import (
	"fmt"
	"strings"
)

// Role is one NATS identity. Its string is the NATS user name.
type Role string

// The roles, one per service plus the operator and the topology owner.
const (
	// Owner declares the JetStream topology (`sluice nats setup`): the
	// only role that may create, update or delete streams and consumers.
	Owner Role = "owner"
	// Producer publishes chunk jobs.
	Producer Role = "producer"
	// Consumer pulls chunk jobs from INGEST's durables and acknowledges
	// them.
	Consumer Role = "consumer"
	// Relay is the outbox-relay: it publishes dead letters and republishes
	// owed chunk jobs.
	Relay Role = "outbox-relay"
	// Replayer is the dlq-replayer: it pulls from the DLQ durables.
	Replayer Role = "dlq-replayer"
	// Operator is the operator CLI: reconcile, replay, pause and resume.
	Operator Role = "operator"
	// Console is the triage console (`sluice console`): it replays,
	// pauses and resumes replays and reads the replay durable, and
	// nothing else; it neither publishes chunk jobs nor deletes messages.
	Console Role = "console"
)

// Roles lists every role in a stable order.
func Roles() []Role { return []Role{Owner, Producer, Consumer, Relay, Replayer, Operator, Console} }

// PasswordVar is the environment variable that holds the role's password
// in the shipped server configuration, e.g. NATS_PRODUCER_PASSWORD.
func (r Role) PasswordVar() string {
	return "NATS_" + strings.ToUpper(strings.ReplaceAll(string(r), "-", "_")) + "_PASSWORD"
}

// ForBinary returns the role a Sluice binary connects as: its own for each
// service, Operator for the CLI (`sluice`).
func ForBinary(name string) (Role, error) {
	switch name {
	case "producer":
		return Producer, nil
	case "consumer":
		return Consumer, nil
	case "outbox-relay":
		return Relay, nil
	case "dlq-replayer":
		return Replayer, nil
	case "sluice":
		return Operator, nil
	}
	return "", fmt.Errorf("no NATS role for binary %q", name)
}
