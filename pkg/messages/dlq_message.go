package messages

import (
	"fmt"
	"strings"
)

// DLQHeaderPrefix starts the name of every header a dead letter's message
// may carry; headers that steer JetStream (Nats-*) never come from the
// outbox.
const DLQHeaderPrefix = "Sluice-"

// CheckDLQMessage reports why a message is not a well-formed dead letter
// for the DLQ stream, or nil: payload must decode as a DeadLetter
// (DecodeDeadLetter), subject must be DLQSubject of its disposition and
// source, and every header name must start with DLQHeaderPrefix followed
// by letters and '-' only. The outbox relay refuses to publish a row that
// fails it, whoever wrote the row; migration 20's outbox_row_ok is the
// same rule, short of a full decode, in PostgreSQL. The error matches
// ErrInvalid.
func CheckDLQMessage(subject string, headers map[string]string, payload []byte) error {
	dl, err := DecodeDeadLetter(payload)
	if err != nil {
		return err
	}
	if want := DLQSubject(dl.Disposition, dl.SourceID); subject != want {
		return invalid("subject", fmt.Sprintf("%q is not the dead letter's own subject %q", displayKey(subject), want))
	}
	for name := range headers {
		if !validDLQHeader(name) {
			return invalid("headers", fmt.Sprintf("%q is not a %s* header", displayKey(name), DLQHeaderPrefix))
		}
	}
	return nil
}

// validDLQHeader says whether name is DLQHeaderPrefix and 1–64 letters or
// '-'.
func validDLQHeader(name string) bool {
	rest, ok := strings.CutPrefix(name, DLQHeaderPrefix)
	if !ok || rest == "" || len(rest) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}
