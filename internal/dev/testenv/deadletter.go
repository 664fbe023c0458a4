package testenv

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// DeadLetter is a well-formed outbox message, as the pipeline writes one:
// the quarantined dead letter of chunk index of a document of source, on
// its own DLQ subject. The outbox takes nothing else (migration 20).
func DeadLetter(t testing.TB, source string, index int) outbox.Message {
	t.Helper()
	doc := messages.DocID(source, "doc.md")
	dl := messages.DeadLetter{Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(doc, index),
		DocID: doc, ChunkIndex: index, DocVersion: 1, SourceID: source, SourceNativeID: "doc.md",
		Disposition: messages.DispositionQuarantine, ErrorClass: "bad_request", Stage: "embed", Attempts: 1,
		FailedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Payload: []byte(`{}`)}
	payload, err := dl.Encode()
	if err != nil {
		t.Fatalf("testenv: dead letter: %v", err)
	}
	return outbox.Message{Subject: messages.DLQSubject(dl.Disposition, source), Payload: payload,
		Headers: map[string]string{"Sluice-Dead-Letter-Id": dl.DeadLetterID}}
}
