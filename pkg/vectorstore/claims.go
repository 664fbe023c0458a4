package vectorstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Claimer is a Store that lets processes tell each other which texts they
// are embedding, so that a text whose vector is not stored yet is sent to
// the provider by one process while the others wait for its vector
// (text_claims, migration 32). A claim is only a hint: a claimer that
// crashes or stalls delays its text's other chunks until its claim is
// older than the time to live, when another process takes it over; no
// chunk ever depends on a claim to be stored. *Postgres is one.
type Claimer interface {
	// ClaimTexts claims, for owner, each of hashes that no other owner
	// claimed less than ttl ago, and returns those another owner holds.
	// An owner's own claims are renewed.
	ClaimTexts(ctx context.Context, db DB, owner string, hashes []TextHash, ttl time.Duration) (heldElsewhere map[TextHash]bool, err error)
	// ReleaseTexts drops owner's claims on hashes, so that the processes
	// waiting on texts the owner could not embed take them over at once.
	ReleaseTexts(ctx context.Context, db DB, owner string, hashes []TextHash) error
}

var _ Claimer = (*Postgres)(nil)

// claimSQL inserts the claims in hash order, so that two processes
// claiming overlapping texts lock them in the same order and never
// deadlock. A row is taken over when it is the owner's own or older than
// the time to live; RETURNING lists the rows this statement wrote.
const claimSQL = `INSERT INTO text_claims AS c (generation, text_hash, claimed_by, claimed_at)
SELECT $1, h, $2, now() FROM unnest($3::bytea[]) h ORDER BY h
ON CONFLICT (generation, text_hash) DO UPDATE SET claimed_by = EXCLUDED.claimed_by, claimed_at = EXCLUDED.claimed_at
WHERE c.claimed_by = EXCLUDED.claimed_by OR c.claimed_at < now() - $4::interval
RETURNING text_hash`

// ClaimTexts implements Claimer with one statement for the store's
// generation. Empty hashes is a no-op.
func (p *Postgres) ClaimTexts(ctx context.Context, db DB, owner string, hashes []TextHash, ttl time.Duration) (map[TextHash]bool, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, claimSQL, p.generation, owner, sortedKeys(hashes), ttl)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: claim %d texts: %w", len(hashes), err)
	}
	mine := make(map[TextHash]bool, len(hashes))
	var key []byte
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error {
		mine[TextHash(key)] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("vectorstore: claim %d texts: %w", len(hashes), err)
	}
	var elsewhere map[TextHash]bool
	for _, h := range hashes {
		if !mine[h] {
			if elsewhere == nil {
				elsewhere = map[TextHash]bool{}
			}
			elsewhere[h] = true
		}
	}
	return elsewhere, nil
}

// releaseSQL locks the owner's claims in hash order before deleting
// them, the order claimSQL locks them in, so that a release and another
// process's claim of the same texts never deadlock.
const releaseSQL = `DELETE FROM text_claims c USING (
	SELECT generation, text_hash FROM text_claims
	WHERE generation = $1 AND claimed_by = $2 AND text_hash = ANY($3::bytea[])
	ORDER BY text_hash FOR UPDATE) mine
WHERE c.generation = mine.generation AND c.text_hash = mine.text_hash`

// ReleaseTexts implements Claimer. Empty hashes is a no-op.
func (p *Postgres) ReleaseTexts(ctx context.Context, db DB, owner string, hashes []TextHash) error {
	if len(hashes) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, releaseSQL, p.generation, owner, sortedKeys(hashes)); err != nil {
		return fmt.Errorf("vectorstore: release %d texts: %w", len(hashes), err)
	}
	return nil
}

// SweepTextClaims deletes the claims of every generation older than ttl,
// left by claimers that died, skipping those another statement holds:
// a process taking one over, or releasing its own. It returns how many
// it deleted.
func SweepTextClaims(ctx context.Context, db DB, ttl time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM text_claims WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM text_claims WHERE claimed_at < now() - $1::interval FOR UPDATE SKIP LOCKED))`, ttl)
	if err != nil {
		return 0, fmt.Errorf("vectorstore: sweep text claims: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeleteTextClaims deletes the claims of every generation older than
// age, whoever holds them: reconcile's repair of claims no pipeline
// swept.
func DeleteTextClaims(ctx context.Context, db DB, age time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM text_claims WHERE claimed_at < now() - $1::interval`, age)
	if err != nil {
		return 0, fmt.Errorf("vectorstore: delete text claims: %w", err)
	}
	return tag.RowsAffected(), nil
}

// CountTextClaims counts the claims of every generation older than age.
func CountTextClaims(ctx context.Context, db DB, age time.Duration) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM text_claims WHERE claimed_at < now() - $1::interval`, age).Scan(&n); err != nil {
		return 0, fmt.Errorf("vectorstore: count text claims: %w", err)
	}
	return n, nil
}

// sortedKeys returns the distinct hashes as byte slices in ascending
// order.
func sortedKeys(hashes []TextHash) [][]byte {
	keys := make([][]byte, len(hashes))
	for i := range hashes {
		keys[i] = hashes[i][:]
	}
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}
