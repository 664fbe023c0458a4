package natsauth

import (
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// Permissions are the subjects a role may publish and subscribe to. Both
// are allow lists: anything not listed is refused by the server.
type Permissions struct {
	// Publish lists the subjects the role may publish to, JetStream API
	// requests and acknowledgements included.
	Publish []string
	// Subscribe lists the subjects the role may subscribe to.
	Subscribe []string
}

// Inboxes is the subject a role subscribes to for its replies —
// JetStream API answers, PubAcks and the messages a pull delivers — which
// broker.Connect puts under the role's own prefix, so no role can read
// another's.
func Inboxes(role Role) string { return broker.InboxPrefix(string(role)) + ".>" }

// jsAPI is the prefix of JetStream's API subjects.
const jsAPI = "$JS.API."

// streamInfo lets a role read both streams' information: services verify
// the topology at startup and watch INGEST's state.
var streamInfo = []string{
	jsAPI + "INFO",
	jsAPI + "STREAM.INFO." + broker.IngestStream,
	jsAPI + "STREAM.INFO." + broker.DLQStream,
}

// pull lets a role read, pull from and acknowledge the named durables of
// stream.
func pull(stream string, durables ...string) []string {
	var out []string
	for _, d := range durables {
		out = append(out,
			jsAPI+"CONSUMER.INFO."+stream+"."+d,
			jsAPI+"CONSUMER.MSG.NEXT."+stream+"."+d,
			"$JS.ACK."+stream+"."+d+".>")
	}
	return out
}

// readIngest lets the operator read INGEST's messages by sequence:
// reconcile compares the stream with the manifest. Publishers verify a
// deduplicated PubAck from the stream's state alone (internal/ingest/publish),
// so that no service can read chunk text back.
var readIngest = jsAPI + "STREAM.MSG.GET." + broker.IngestStream

// budgetMember lets a process that calls the provider draw on the fleet
// budget (package fleetbudget): read the bucket's subjects, get entries
// directly, put and delete entries — no consumer, no administration.
var budgetMember = append([]string{broker.BudgetSubjects}, budgetReader...)

// budgetReader lets a role read the fleet budget's entries: reconcile
// checks that no budget is overdrawn.
var budgetReader = []string{
	jsAPI + "STREAM.INFO." + broker.BudgetStream,
	jsAPI + "DIRECT.GET." + broker.BudgetStream + ".>",
}

// s3Follower lets the producer follow an S3 source's events: create its
// durable on S3_EVENTS (broker.S3EventsDurable), pull from it and
// acknowledge.
var s3Follower = []string{
	jsAPI + "STREAM.INFO." + broker.S3EventsStream,
	jsAPI + "CONSUMER.CREATE." + broker.S3EventsStream + ".>",
	jsAPI + "CONSUMER.INFO." + broker.S3EventsStream + ".*",
	jsAPI + "CONSUMER.MSG.NEXT." + broker.S3EventsStream + ".*",
	"$JS.ACK." + broker.S3EventsStream + ".>",
}

// For returns the permissions of role; an unknown role has none.
func For(role Role) Permissions {
	var pub []string
	switch role {
	case Owner:
		return Permissions{Publish: []string{">"}, Subscribe: []string{">"}}
	case Producer:
		pub = append(pub, broker.ChunkSubjects)
		pub = append(pub, s3Follower...)
	case Consumer:
		pub = append(pull(broker.IngestStream, broker.WorkersConsumer, broker.ReplayConsumer, broker.BackfillConsumer), budgetMember...)
		// the backfill publishes the chunks later index generations owe
		pub = append(pub, broker.BackfillSubjects)
	case Relay:
		pub = append(pub, broker.DLQSubjects, broker.ChunkSubjects)
	case Replayer:
		pub = append(pull(broker.DLQStream, broker.TriageConsumer, broker.ReplayerConsumer, broker.AlerterConsumer), budgetMember...)
	case Operator:
		pub = append(pub, budgetReader...)
		pub = append(pub, broker.ChunkSubjects, broker.ReplaySubjects, readIngest,
			// reconcile --redrive clears stranded messages
			jsAPI+"STREAM.MSG.DELETE."+broker.IngestStream,
			jsAPI+"CONSUMER.INFO."+broker.IngestStream+".*",
			jsAPI+"CONSUMER.INFO."+broker.DLQStream+".*",
			// dlq pause|resume
			jsAPI+"CONSUMER.PAUSE."+broker.IngestStream+"."+broker.ReplayConsumer,
			jsAPI+"CONSUMER.PAUSE."+broker.DLQStream+"."+broker.ReplayerConsumer)
	case Console:
		pub = append(pub, broker.ReplaySubjects,
			// the overview's replay durable state
			jsAPI+"CONSUMER.INFO."+broker.IngestStream+"."+broker.ReplayConsumer,
			// pause and resume replays
			jsAPI+"CONSUMER.PAUSE."+broker.IngestStream+"."+broker.ReplayConsumer,
			jsAPI+"CONSUMER.PAUSE."+broker.DLQStream+"."+broker.ReplayerConsumer)
	default:
		return Permissions{}
	}
	return Permissions{Publish: append(append([]string(nil), streamInfo...), pub...), Subscribe: []string{Inboxes(role)}}
}
