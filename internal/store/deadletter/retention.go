package deadletter

import (
	"context"
	"fmt"
	"github.com/jackc/pgx/v5"
	"time"

	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// The retention statements of the dead letter tables. Each purges at
// most limit rows due at now and returns how many it purged; a
// retention.Purger calls it until a batch comes back short. Each is safe
// to run while triage runs and from several replicas.

// PurgePayloads enforces payload retention on dead_letters: rows whose
// last failure is older at now than their retention lose their payload
// (payload_purged_at records when) and keep everything else — counts,
// classes and times stay for trend reports. A row's retention is its
// source's dead_letter_payloads policy, else payloads.Default; an
// escalation's is its source's in escalations, which the policy
// never lets fall below the retention mandate. Until then an open dead
// letter keeps its payload and can be replayed; a purged open row can no
// longer be, and by then its DLQ message has aged out too.
func PurgePayloads(ctx context.Context, q manifest.Querier, now time.Time, payloads, escalations policy.Bounds, limit int) (int64, error) {
	// SKIP LOCKED: a row triage is updating right now is getting a fresh
	// failure, so it is not due for purging anyway.
	tag, err := q.Exec(ctx, `
		UPDATE dead_letters SET payload = NULL, payload_purged_at = $1
		WHERE dead_letter_id IN (
			SELECT d.dead_letter_id FROM dead_letters d
			LEFT JOIN unnest($2::text[], $3::float8[], $4::float8[]) AS p(source_id, payload_secs, escalation_secs)
			       ON p.source_id = d.source_id
			WHERE d.payload IS NOT NULL
			  AND d.last_failed_at < $1::timestamptz - make_interval(secs => $7)
			  AND d.last_failed_at < $1::timestamptz - make_interval(secs => CASE
			      WHEN d.disposition = 'escalate' THEN coalesce(p.escalation_secs, $5)
			      ELSE coalesce(p.payload_secs, $6) END)
			LIMIT $8 FOR UPDATE OF d SKIP LOCKED)`,
		now, payloads.Sources, payloads.Seconds, escalations.Seconds, escalations.Default, payloads.Default,
		min(payloads.Shortest(), escalations.Shortest()), limit)
	if err != nil {
		return 0, fmt.Errorf("purge dead letter payloads: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PurgeReferencedPayloads enforces retention on dead_letter_payloads, the
// payloads too large for the DLQ stream, which travel by reference. Such
// a row is part of its DLQ message, and is kept as long as the stream
// keeps messages: keep (the default section's payload retention, the
// stream's MaxAge by default) after it was written; the table names
// no source, so no source's policy applies. Two exceptions keep it: its
// outbox row is unpublished (the relay still owes the message), or it is
// the current payload of an open dead letter that keeps its own (the
// replayer may still be handed the message). And it goes sooner with
// the payload it copies: once retention purged that dead letter's
// payload, by its source's policy.
func PurgeReferencedPayloads(ctx context.Context, q manifest.Querier, now time.Time, keep time.Duration, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
		DELETE FROM dead_letter_payloads WHERE outbox_id IN (
			SELECT r.outbox_id FROM dead_letter_payloads r
			WHERE ((r.created_at < $1::timestamptz - make_interval(secs => $2)
			        AND NOT EXISTS (SELECT 1 FROM dead_letters d
			                        WHERE d.last_outbox_id = r.outbox_id AND d.resolved_at IS NULL AND d.payload IS NOT NULL))
			    OR EXISTS (SELECT 1 FROM dead_letters d WHERE d.last_outbox_id = r.outbox_id AND d.payload_purged_at IS NOT NULL))
			  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = r.outbox_id AND o.published_at IS NULL)
			ORDER BY r.outbox_id
			LIMIT $3 FOR UPDATE OF r SKIP LOCKED)`,
		now, keep.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("purge by-reference dead letter payloads: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PurgeHistory enforces retention on dead_letter_history: an event older
// at now than its dead letter's source's dead_letter_history retention
// (else history.Default) is deleted. The events of an
// escalation — its dead letter's latest disposition, or the event's own —
// follow the escalation retention instead, as its payload does. The dead
// letter's row keeps its counts and classes whatever its history.
func PurgeHistory(ctx context.Context, q manifest.Querier, now time.Time, history, escalations policy.Bounds, limit int) (int64, error) {
	// History is append-only below the schema's owner: the owner's
	// purge_dead_letter_history (migration 20) deletes only events past
	// these bounds.
	rows, err := q.Query(ctx, `SELECT purge_dead_letter_history($1, $2, $3, $4, $5, $6, $7, $8)`,
		now, history.Sources, history.Seconds, escalations.Seconds, escalations.Default, history.Default,
		min(history.Shortest(), escalations.Shortest()), limit)
	if err != nil {
		return 0, fmt.Errorf("purge dead letter history: %w", err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("purge dead letter history: %w", err)
	}
	return n, nil
}
