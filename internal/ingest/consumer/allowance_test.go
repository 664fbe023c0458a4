package consumer_test

import (
	"testing"
	"time"
)

// The operator's call on a false positive: a source whose policy allows
// password_assignment has its documentation's example password stored;
// the same text in another source is escalated, never embedded.
func TestSecretsAllowStoresTheExampleInItsSourceOnly(t *testing.T) {
	t.Parallel()
	table := loadPolicy(t, "sources:\n  manuals:\n    secrets_allow: [password_assignment]\n")
	o := options{sources: table}
	b := setup(t, o)
	b.startConsumer(o)
	example := []byte("To connect, set the example credentials shown here:\n\nDB_PASSWORD=Tr0ub4dor-and-3\n")
	b.produce("manuals", map[string][]byte{"setup.txt": example})
	b.produce("tickets", map[string][]byte{"setup.txt": example})
	b.waitSettled(60 * time.Second)

	const q = `SELECT count(*) FROM ingest_manifest m JOIN documents d USING (doc_id) WHERE d.source_id = $1 AND m.status = $2`
	if n := b.count(q, "manuals", "stored"); n != 1 {
		t.Errorf("manuals: %d chunks stored, want the allowed example's 1", n)
	}
	if n := b.count(q, "tickets", "parked"); n != 1 {
		t.Errorf("tickets: %d chunks parked, want the example escalated", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE payload->>'source_id' = 'tickets' AND payload->>'disposition' = 'escalate'`); n != 1 {
		t.Errorf("tickets: %d escalations in the outbox, want 1", n)
	}
}
