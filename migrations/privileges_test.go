package migrations_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

// sqlstate runs sql on conn and returns its SQLSTATE, "" on success.
func sqlstate(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	_, err := conn.Exec(t.Context(), sql, args...)
	if err == nil {
		return ""
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("%s as %s: %v", sql, conn.Config().User, err)
	}
	return pgErr.Code
}

// deadLetterRow is a well-formed outbox row: a dead letter on its own DLQ
// subject, as the pipeline writes it.
func deadLetterRow(t *testing.T) (subject, headers, payload string) {
	t.Helper()
	doc := messages.DocID("wiki", "a.md")
	dl := messages.DeadLetter{Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(doc, 0), DocID: doc,
		DocVersion: 1, SourceID: "wiki", SourceNativeID: "a.md", Disposition: messages.DispositionQuarantine,
		ErrorClass: "bad_request", Stage: "embed", Attempts: 1, FailedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Payload: []byte(`{"x":1}`)}
	raw, err := dl.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return messages.DLQSubject(dl.Disposition, dl.SourceID), `{"Sluice-Dead-Letter-Id": "` + dl.DeadLetterID + `"}`, string(raw)
}

// Each service's role may run what its statements need and nothing more:
// in particular no role reads escalated text, none rewrites or erases an
// audit or history row, and none but the owner changes the outbox's shape.
func TestEachRoleHasOnlyWhatItNeeds(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	subject, headers, payload := deadLetterRow(t)
	const (
		readSecret     = `SELECT text FROM escalated_chunks`
		readEscalated  = `SELECT doc_id, rule FROM escalated_chunks`
		keepSecret     = `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ('d', 0, 1, 'r', 'AKIA secret')`
		eraseSecret    = `DELETE FROM escalated_chunks WHERE false`
		eraseOutbox    = `SELECT erase_outbox_payloads('{}')`
		askDeletion    = `INSERT INTO deletion_requests (request_id, requested_by, reason, source_id, dry_run, selected) VALUES ('del_t', 'me', 'why', 's', true, 0)`
		reveal         = `SELECT reveal_escalated_text('d', 0, 1, 'me', 'curious')`
		eraseAudit     = `DELETE FROM replay_audit WHERE false`
		rewriteAudit   = `UPDATE replay_audit SET reason = 'nothing happened' WHERE false`
		appendAudit    = `INSERT INTO replay_audit (replay_id, action, requested_by, reason, scope, dry_run, selected) VALUES ('rp_t', 'pause', 'me', 'why', '{}', false, 0)`
		dispatched     = `SELECT record_replay_dispatched('rp_none', 1)`
		readHistory    = `SELECT event FROM dead_letter_history`
		eraseHistory   = `DELETE FROM dead_letter_history WHERE false`
		rewriteHistory = `UPDATE dead_letter_history SET event = 'resolved' WHERE false`
		forgeHistory   = `INSERT INTO dead_letter_history (dead_letter_id, event) VALUES ('x', 'resolved')`
		purgeHistory   = `SELECT purge_dead_letter_history(now(), '{}', '{}', '{}', 86400, 86400, 86400, 10)`
		eraseReveals   = `DELETE FROM escalated_text_audit WHERE false`
		readVectors    = `SELECT text FROM chunk_embeddings`
		writeVectors   = `UPDATE chunk_embeddings SET text = '' WHERE false`
		pruneVectors   = `DELETE FROM chunk_embeddings WHERE doc_id = 'gone'`
		writeCut       = `INSERT INTO generation_documents (generation, doc_id, version, chunk_count) SELECT 2, 'd', 1, 0 WHERE false`
		readCutText    = `SELECT text FROM generation_chunks`
		readCutKeys    = `SELECT c.doc_id, c.chunk_index, c.version, c.content_hash, c.withheld, d.version FROM generation_chunks c JOIN generation_documents d USING (generation, doc_id)`
		eraseCut       = `DELETE FROM generation_chunks WHERE doc_id = 'gone'`
		claimText      = `INSERT INTO text_claims (generation, text_hash, claimed_by) VALUES (1, sha256('t'), 'me') ON CONFLICT (generation, text_hash) DO UPDATE SET claimed_at = now() RETURNING text_hash`
		sweepClaims    = `DELETE FROM text_claims WHERE false`
		takeClaims     = `SELECT ctid FROM text_claims FOR UPDATE SKIP LOCKED`
		readClaims     = `SELECT count(*) FROM text_claims`
		reuseVectors   = `SELECT text_hash, embedding FROM chunk_embeddings WHERE text_hash = ANY('{}'::bytea[]) AND model = 'm' UNION ALL SELECT text_hash, embedding FROM chunk_embeddings_previous WHERE text_hash = ANY('{}'::bytea[])`
		readOutbox     = `SELECT payload FROM outbox`
		publishOutbox  = `UPDATE outbox SET published_at = now() WHERE false`
		rewriteOutbox  = `UPDATE outbox SET subject = 'ingest.chunks.x' WHERE false`
		pruneOutbox    = `DELETE FROM outbox WHERE false`
		newDocument    = `INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status) VALUES ('t', 's', 'n', 1, 'h', 0, 'pending')`
		readLetters    = `SELECT error_detail FROM dead_letters`
		resolveLetter  = `UPDATE dead_letters SET resolved_at = now() WHERE false`
		markReplayed   = `UPDATE dead_letters SET replayed_at = now(), replay_id = 'rp' WHERE false`
		reclassify     = `UPDATE dead_letters SET disposition = 'retry' WHERE false`
		eraseLetters   = `DELETE FROM dead_letters WHERE false`
		runs           = `UPDATE ingest_runs SET status = 'completed' WHERE false`
		readGens       = `SELECT model, status FROM index_generations`
		createGen      = `INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status) VALUES (2, 'm', 4, 512, 64, 'tokens', 'building')`
		retireGen      = `UPDATE index_generations SET status = 'retired', retired_at = now() WHERE false`
		renameGen      = `UPDATE index_generations SET model = 'other' WHERE false`
		forgetGen      = `DELETE FROM index_generations WHERE false`
		auditGen       = `INSERT INTO index_generation_audit (generation, action, requested_by, reason, dry_run) VALUES (2, 'create', 'me', 'why', true)`
		rewriteGenLog  = `UPDATE index_generation_audit SET reason = 'nothing happened' WHERE false`
		eraseGenLog    = `DELETE FROM index_generation_audit WHERE false`
		readGenText    = `SELECT text FROM generation_embeddings`
		findGenDocs    = `SELECT doc_id FROM generation_embeddings`
		readGenKeys    = `SELECT generation, doc_id, chunk_index, version, content_hash FROM generation_embeddings`
		eraseGenDoc    = `DELETE FROM generation_embeddings WHERE doc_id = 'gone'`
		dropGen        = `DELETE FROM generation_embeddings WHERE generation = 2`
		writeGen       = `UPDATE generation_embeddings SET text = '' WHERE false`
		buildGenIndex  = `SELECT build_generation_index(2)`
		dropGenIndex   = `SELECT drop_generation_index(2)`
		queueOwed      = `INSERT INTO generation_backfill_queue (generation, doc_id, chunk_index, version, content_hash, source_id) SELECT 2, 'd', 0, 1, 'h', 's' WHERE false`
		takeOwed       = `DELETE FROM generation_backfill_queue WHERE false`
		lockOwed       = `SELECT id FROM generation_backfill_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`
		readBackfill   = `SELECT pass, planned FROM generation_backfill`
		newPass        = `UPDATE generation_backfill SET cursor_doc = NULL, cursor_chunk = NULL, scanned = false, pass = pass + 1, updated_at = now() WHERE generation = 2 AND scanned`
		replan         = `UPDATE generation_backfill SET planned = 0 WHERE false`
		parkInGen      = `INSERT INTO generation_parked (generation, doc_id, chunk_index, version, content_hash, source_id, error_class, attempts) SELECT 2, 'd', 0, 1, 'h', 's', 'c', 1 WHERE false`
		retryGen       = `DELETE FROM generation_parked WHERE generation = 2`
		eraseParked    = `DELETE FROM generation_parked WHERE doc_id = 'gone'`
		markReady      = `SELECT mark_generation_ready(99, '{}')`
		lockGen        = `SELECT lock_generation_for_write(2)`
		openBulk       = `INSERT INTO bulk_batches (source_id, opened_at, updated_at) VALUES ('s', now(), now())`
		admitBulk      = `WITH b AS (INSERT INTO bulk_batches (source_id, opened_at, updated_at) VALUES ('s', now(), now()) RETURNING batch_id) INSERT INTO bulk_members (batch_id, custom_id, line_id, generation, source_id, doc_id, chunk_index, version, content_hash, text, tokens, bytes, updated_at) SELECT batch_id, 'd:0:1', 'd:0:1', 1, 's', 'd', 0, 1, 'h', 'text', 1, 1, now() FROM b`
		readBulkText   = `SELECT text FROM bulk_members`
		readBulk       = `SELECT state, requests, stored, parked, requeued FROM bulk_batches`
		cancelBulk     = `UPDATE bulk_batches SET state = 'cancelled', cancel_requested_at = now(), finished_at = now(), updated_at = now() WHERE false`
		applyBulk      = `UPDATE bulk_members SET state = 'applied' WHERE false`
		uploadBulk     = `UPDATE bulk_batches SET input_file_id = 'f' WHERE false`
		forgetBulk     = `DELETE FROM bulk_batches WHERE false`
		forgetMembers  = `DELETE FROM bulk_members WHERE false`
		eraseBulkDoc   = `DELETE FROM bulk_members WHERE doc_id = 'gone'`
		keepBytes      = `INSERT INTO file_bytes (sha256, bytes, size) VALUES (repeat('a', 64), 'x', 1)`
		readKeptBytes  = `SELECT bytes FROM file_bytes`
		purgeBytes     = `DELETE FROM file_bytes WHERE false`
		// An S3 source is declared by its runs, a table source by the
		// operator.
		declareSource = `INSERT INTO sources (name, kind) VALUES ('probe', 's3')`
	)
	// Bulk mode's ledger: the consumer runs it, the operator reads it and
	// cancels, the console reads the batches' counts; the erasing roles
	// delete a deleted document's members.
	bulkWrites := []string{openBulk, admitBulk, cancelBulk, applyBulk, uploadBulk}
	writeOutbox := func(subject string) string {
		return `INSERT INTO outbox (subject, headers, payload) VALUES ('` + subject + `', '` + headers + `', '` + strings.ReplaceAll(payload, "'", "''") + `')`
	}
	forged := writeOutbox("ingest.chunks.x")
	// No writer sets refused_at, which lifts the CHECK.
	preRefused := `INSERT INTO outbox (subject, headers, payload, refused_at) VALUES ('ingest.chunks.x', '{}', '{}', now())`
	queue := writeOutbox(subject)
	// Every role is denied these: audit and history are append-only, and
	// nobody reads a secret but the operator, through its function.
	common := []string{readSecret, eraseAudit, rewriteAudit, eraseHistory, rewriteHistory, forgeHistory,
		eraseReveals, rewriteOutbox, preRefused, renameGen, forgetGen, rewriteGenLog, eraseGenLog, forgetBulk}
	for _, tc := range []struct {
		role            string
		allowed, denied []string
	}{
		{migrations.ProducerRole,
			[]string{keepBytes, purgeBytes, writeCut, readCutText, readCutKeys, eraseCut, readGens, queueOwed, keepSecret, eraseSecret, eraseOutbox, askDeletion, queue, pruneVectors, resolveLetter, newDocument, runs,
				findGenDocs, eraseGenDoc, takeOwed, eraseParked, eraseBulkDoc, declareSource},
			[]string{readKeptBytes, readEscalated, readVectors, reuseVectors, writeVectors, readOutbox, publishOutbox, pruneOutbox,
				reclassify, eraseLetters, markReplayed, appendAudit, dispatched, readHistory, purgeHistory, reveal,
				createGen, retireGen, auditGen, readGenText, dropGen, buildGenIndex, dropGenIndex,
				writeGen, readBackfill, parkInGen, markReady, lockGen,
				readBulk, readBulkText, openBulk, admitBulk, cancelBulk, applyBulk, uploadBulk, claimText, sweepClaims, readClaims}},
		{migrations.ConsumerRole,
			[]string{readCutText, readCutKeys, eraseCut, keepSecret, queue, writeVectors, readVectors, reuseVectors, pruneVectors, resolveLetter, runs,
				readGens, readGenText, findGenDocs, eraseGenDoc, writeGen, queueOwed, takeOwed, lockOwed, readBackfill, newPass, replan, parkInGen, retryGen, markReady, lockGen,
				openBulk, admitBulk, readBulk, readBulkText, cancelBulk, applyBulk, uploadBulk, claimText, sweepClaims, takeClaims, readClaims},
			[]string{keepBytes, readKeptBytes, purgeBytes, writeCut, readEscalated, eraseSecret, eraseOutbox, askDeletion, readOutbox, publishOutbox, pruneOutbox, eraseLetters, newDocument,
				appendAudit, dispatched, readHistory, purgeHistory, reveal,
				createGen, retireGen, auditGen, buildGenIndex, dropGenIndex, forgetMembers, declareSource}},
		{migrations.RelayRole,
			[]string{readOutbox, publishOutbox, pruneOutbox},
			append([]string{keepBytes, readKeptBytes, purgeBytes, writeCut, readCutText, readCutKeys, eraseCut, queue, keepSecret, eraseOutbox, askDeletion, readEscalated, readVectors, reuseVectors, readLetters, resolveLetter, newDocument, appendAudit,
				dispatched, readHistory, purgeHistory, runs, reveal,
				readGens, createGen, retireGen, auditGen, readGenText, findGenDocs, eraseGenDoc, dropGen, buildGenIndex, dropGenIndex,
				writeGen, queueOwed, takeOwed, readBackfill, parkInGen, retryGen, markReady, lockGen,
				readBulk, readBulkText, forgetMembers, claimText, sweepClaims, readClaims, declareSource}, bulkWrites...)},
		{migrations.ReplayerRole,
			[]string{purgeBytes, keepSecret, readEscalated, eraseSecret, queue, readVectors, reuseVectors, writeVectors, readLetters, resolveLetter,
				reclassify, readHistory, purgeHistory, readGens, readGenText, findGenDocs, eraseGenDoc, queueOwed, claimText, sweepClaims, takeClaims, readClaims},
			append([]string{keepBytes, readKeptBytes, writeCut, readCutText, readCutKeys, eraseCut, readOutbox, publishOutbox, pruneOutbox, eraseLetters, eraseOutbox, askDeletion, newDocument, appendAudit, dispatched, reveal,
				createGen, retireGen, auditGen, buildGenIndex, dropGenIndex,
				writeGen, takeOwed, readBackfill, parkInGen, retryGen, markReady, lockGen,
				readBulk, readBulkText, forgetMembers, declareSource}, bulkWrites...)},
		{migrations.OperatorRole,
			[]string{keepBytes, readKeptBytes, purgeBytes, readCutText, readCutKeys, eraseCut, reveal, readEscalated, queue, readVectors, readOutbox, readLetters, resolveLetter, markReplayed, appendAudit,
				dispatched, readHistory, runs, newDocument, eraseSecret, pruneVectors, eraseOutbox, askDeletion,
				readGens, createGen, retireGen, auditGen, readGenText, findGenDocs, eraseGenDoc, dropGen, dropGenIndex,
				takeOwed, readBackfill, newPass, retryGen, readBulk, readBulkText, cancelBulk, eraseBulkDoc, readClaims, sweepClaims, declareSource},
			[]string{writeCut, keepSecret, writeVectors, publishOutbox, pruneOutbox, eraseLetters,
				purgeHistory, writeGen, queueOwed, lockOwed, replan, parkInGen, markReady, lockGen, openBulk, admitBulk, applyBulk, uploadBulk,
				claimText, takeClaims}},
		{migrations.ConsoleRole,
			[]string{readCutKeys, readEscalated, readLetters, markReplayed, appendAudit, dispatched, readHistory, findGenDocs, readGens, readGenKeys, readBackfill, readBulk,
				readKeptBytes},
			append([]string{keepBytes, purgeBytes, writeCut, readCutText, eraseCut, keepSecret, eraseSecret, eraseOutbox, askDeletion, queue, readVectors, reuseVectors, writeVectors, pruneVectors, readOutbox, resolveLetter,
				reclassify, eraseLetters, newDocument, runs, purgeHistory, reveal,
				createGen, retireGen, auditGen, readGenText, eraseGenDoc, dropGen, buildGenIndex, dropGenIndex,
				writeGen, queueOwed, takeOwed, newPass, parkInGen, retryGen, markReady, lockGen, readBulkText, forgetMembers,
				claimText, sweepClaims, readClaims, declareSource}, bulkWrites...)},
		{migrations.ReadonlyRole,
			[]string{readKeptBytes, readCutText, readCutKeys, readLetters, readHistory, readOutbox, readVectors, readGens, readGenText, readBackfill, readBulk, readBulkText, readClaims},
			append([]string{keepBytes, purgeBytes, writeCut, eraseCut, readEscalated, keepSecret, eraseOutbox, askDeletion, queue, resolveLetter, newDocument, appendAudit, dispatched, purgeHistory, runs, reveal,
				createGen, retireGen, auditGen, eraseGenDoc, dropGen, buildGenIndex, dropGenIndex,
				writeGen, queueOwed, takeOwed, parkInGen, retryGen, markReady, lockGen, forgetMembers, declareSource}, bulkWrites...)},
	} {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			conn := connect(t, db.RoleURL(tc.role))
			for _, sql := range tc.allowed {
				// Writes that succeed are undone, so that each role starts
				// from the same rows.
				tx, err := conn.Begin(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(t.Context(), sql); err != nil {
					t.Errorf("%s as %s: %v, want allowed", sql, tc.role, err)
				}
				if err := tx.Rollback(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			for _, sql := range append(tc.denied, common...) {
				if code := sqlstate(t, conn, sql); code != "42501" {
					t.Errorf("%s as %s: SQLSTATE %q, want insufficient_privilege (42501)", sql, tc.role, code)
				}
			}
			// A forged outbox row is refused whoever may write the outbox.
			if code := sqlstate(t, conn, forged); code != "23514" && code != "42501" {
				t.Errorf("a dead letter on ingest.chunks.x as %s: SQLSTATE %q, want it refused", tc.role, code)
			}
		})
	}
}

// The outbox takes only a well-formed dead letter on its own DLQ subject,
// even from the schema's owner: the relay publishes what is there.
func TestOutboxRefusesForgedRows(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	subject, headers, payload := deadLetterRow(t)
	var dl map[string]any
	if err := json.Unmarshal([]byte(payload), &dl); err != nil {
		t.Fatal(err)
	}
	with := func(key string, v any) string {
		m := map[string]any{}
		for k, x := range dl {
			m[k] = x
		}
		if v == nil {
			delete(m, key)
		} else {
			m[key] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	insert := `INSERT INTO outbox (subject, headers, payload) VALUES ($1, $2::jsonb, $3::jsonb)`
	for _, role := range []string{"", migrations.ProducerRole, migrations.ConsumerRole, migrations.ReplayerRole, migrations.OperatorRole} {
		url := db.URL
		if role != "" {
			url = db.RoleURL(role)
		}
		conn := connect(t, url)
		who := conn.Config().User
		if code := sqlstate(t, conn, insert, subject, headers, payload); code != "" {
			t.Errorf("a well-formed dead letter as %s: SQLSTATE %s, want it taken", who, code)
		}
		for name, row := range map[string][3]string{
			"a chunk subject":                 {"ingest.chunks.x", headers, payload},
			"a replay subject":                {"ingest.replay.wiki", headers, payload},
			"another source's subject":        {"dlq.quarantine.other", headers, payload},
			"another disposition's subject":   {"dlq.retry.wiki", headers, payload},
			"a wildcard":                      {"dlq.quarantine.>", headers, payload},
			"a payload that is not an object": {subject, headers, `[1]`},
			"no dead_letter_id":               {subject, headers, with("dead_letter_id", nil)},
			"a numeric doc_id":                {subject, headers, with("doc_id", 7)},
			"another schema":                  {subject, headers, with("schema", 2)},
			"no job payload":                  {subject, headers, with("payload", nil)},
			"a NATS header":                   {subject, `{"Nats-Msg-Id": "ingest:x"}`, payload},
			"a non-string header":             {subject, `{"Sluice-Error-Class": 1}`, payload},
		} {
			if code := sqlstate(t, conn, insert, row[0], row[1], row[2]); code != "23514" {
				t.Errorf("%s as %s: SQLSTATE %q, want check_violation (23514)", name, who, code)
			}
		}
	}
}

// Escalated text is read only by the operator, one chunk at a time, and
// each read is recorded with who asked, as whom and why.
func TestRevealEscalatedTextIsAudited(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	if _, err := db.Pool.Exec(t.Context(), `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ('d', 0, 1, 'aws_key', 'AKIA secret')`); err != nil {
		t.Fatal(err)
	}
	op := connect(t, db.RoleURL(migrations.OperatorRole))
	var text *string
	if err := op.QueryRow(t.Context(), `SELECT reveal_escalated_text('d', 0, 1, 'cli:ops', 'incident 42')`).Scan(&text); err != nil || text == nil || *text != "AKIA secret" {
		t.Fatalf("reveal as operator: %v, %v; want the text", text, err)
	}
	if err := op.QueryRow(t.Context(), `SELECT reveal_escalated_text('d', 0, 2, 'cli:ops', 'incident 42')`).Scan(&text); err != nil || text != nil {
		t.Fatalf("reveal of a version never kept: %v, %v; want NULL", text, err)
	}
	if code := sqlstate(t, op, `SELECT reveal_escalated_text('d', 0, 1, 'cli:ops', '')`); code != "23514" {
		t.Errorf("reveal without a reason: SQLSTATE %q, want check_violation", code)
	}
	var who, login, reason string
	var n int
	if err := db.Pool.QueryRow(t.Context(), `
		SELECT count(*) OVER (), requested_by, login, reason FROM escalated_text_audit`).Scan(&n, &who, &login, &reason); err != nil {
		t.Fatal(err)
	}
	if n != 1 || who != "cli:ops" || login != migrations.OperatorRole || reason != "incident 42" {
		t.Errorf("audit: %d rows, %q as %q for %q; want one, cli:ops as %s for incident 42", n, who, login, reason, migrations.OperatorRole)
	}
	for _, role := range []string{migrations.ConsoleRole, migrations.ReplayerRole, migrations.ConsumerRole} {
		if code := sqlstate(t, connect(t, db.RoleURL(role)), `SELECT reveal_escalated_text('d', 0, 1, 'x', 'y')`); code != "42501" {
			t.Errorf("reveal as %s: SQLSTATE %q, want insufficient_privilege", role, code)
		}
	}
}

// History is written by its trigger whoever changes a dead letter, and
// deleted only by the owner's purge, only past its bound.
func TestHistoryIsAppendOnly(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	repl := connect(t, db.RoleURL(migrations.ReplayerRole))
	for _, id := range []string{"old", "new"} {
		if _, err := repl.Exec(t.Context(), `
			INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, disposition,
			                          error_class, stage, attempts, last_outbox_id, first_failed_at, last_failed_at)
			VALUES ($1, $1, 0, 1, 's', 'n', 'quarantine', 'bad_request', 'embed', 1, 1, $2, $2)`,
			id, map[string]time.Time{"old": time.Now().AddDate(-2, 0, 0), "new": time.Now()}[id]); err != nil {
			t.Fatalf("triage as %s: %v", migrations.ReplayerRole, err)
		}
	}
	count := func() (n int) {
		if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM dead_letter_history`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("history after two failures: %d events, want 2 (written by the trigger as the owner)", n)
	}
	if code := sqlstate(t, repl, `SELECT purge_dead_letter_history(now(), '{}', '{}', '{}', 86400, 86400, 0, 10)`); code != "22023" {
		t.Errorf("purge with no bound: SQLSTATE %q, want invalid_parameter_value (22023)", code)
	}
	var purged int64
	if err := repl.QueryRow(t.Context(), `SELECT purge_dead_letter_history(now(), '{}', '{}', '{}', 86400*365, 86400*365, 86400*365, 10)`).Scan(&purged); err != nil {
		t.Fatal(err)
	}
	if purged != 1 || count() != 1 {
		t.Errorf("purge past a year: %d deleted, %d left; want the old event gone and the new one kept", purged, count())
	}
	op := connect(t, db.RoleURL(migrations.OperatorRole))
	if _, err := op.Exec(t.Context(), `INSERT INTO replay_audit (replay_id, action, requested_by, reason, scope, dry_run, selected) VALUES ('rp_1', 'replay', 'me', 'why', '{}', false, 3)`); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3} {
		if _, err := op.Exec(t.Context(), `SELECT record_replay_dispatched('rp_1', $1)`, n); err != nil {
			t.Fatal(err)
		}
	}
	var got int
	if err := db.Pool.QueryRow(t.Context(), `SELECT dispatched FROM replay_audit WHERE replay_id = 'rp_1'`).Scan(&got); err != nil || got != 2 {
		t.Errorf("dispatched = %d (%v), want 2: recorded once, never rewritten", got, err)
	}
}
