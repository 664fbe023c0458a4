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
	// ClaimTexts claims, for owner, each of hashes that no stored vector
	// embedded with model answers and no other owner claimed less than
	// ttl ago. It returns the vectors stored for the others and those
	// another owner holds; the rest are owner's now. An owner's own claims
	// are renewed. Looking up and claiming in one statement leaves no
	// moment between them in which another owner could store a text and
	// release it unseen.
	ClaimTexts(ctx context.Context, db DB, owner, model string, hashes []TextHash, ttl time.Duration) (Claims, error)
	// ReleaseTexts drops owner's claims on hashes, so that the processes
	// waiting on texts the owner could not embed take them over at once.
	ReleaseTexts(ctx context.Context, db DB, owner string, hashes []TextHash) error
}

// Claims is what ClaimTexts found for the hashes it did not claim.
type Claims struct {
	// Stored holds a vector stored for each text that had one, as
	// Reuser.Reusable returns it.
	Stored map[TextHash][]float32
	// Elsewhere holds the texts another owner claimed.
	Elsewhere map[TextHash]bool
}

var _ Claimer = (*Postgres)(nil)

// claimStatement looks up the vectors stored for the texts, as
// reuseStatement does, and claims the others in hash order, so that two
// processes claiming overlapping texts lock them in the same order and
// never deadlock. A row is taken over when it is the owner's own or
// older than the time to live. It returns the texts it claimed, with no
// vector, and the stored ones, with theirs; both read one snapshot, so a
// text another owner stored and released before the statement began is
// found stored, and one it stores later was still claimed by it.
func claimStatement(t target) string {
	return `WITH stored AS (` + reuseStatement(t) + `), claimed AS (
INSERT INTO text_claims AS c (generation, text_hash, claimed_by, claimed_at)
SELECT $4, h, $5, now() FROM unnest($1::bytea[]) h WHERE h NOT IN (SELECT text_hash FROM stored) ORDER BY h
ON CONFLICT (generation, text_hash) DO UPDATE SET claimed_by = EXCLUDED.claimed_by, claimed_at = EXCLUDED.claimed_at
WHERE c.claimed_by = EXCLUDED.claimed_by OR c.claimed_at < now() - $6::interval
RETURNING text_hash)
SELECT text_hash, NULL::real[] FROM claimed UNION ALL SELECT * FROM stored`
}

// ClaimTexts implements Claimer with one statement for the store's
// generation. Empty hashes is a no-op.
func (p *Postgres) ClaimTexts(ctx context.Context, db DB, owner, model string, hashes []TextHash, ttl time.Duration) (Claims, error) {
	var found Claims
	if len(hashes) == 0 {
		return found, nil
	}
	rows, err := db.Query(ctx, p.claimSQL, sortedKeys(hashes), model, p.dims, p.generation, owner, ttl)
	if err != nil {
		return found, fmt.Errorf("vectorstore: claim %d texts: %w", len(hashes), err)
	}
	mine := make(map[TextHash]bool, len(hashes))
	var (
		key []byte
		vec []float32
	)
	if _, err := pgx.ForEachRow(rows, []any{&key, &vec}, func() error {
		var h TextHash
		if len(key) != len(h) {
			return nil
		}
		copy(h[:], key)
		switch {
		case vec == nil:
			mine[h] = true
		case len(vec) == p.dims:
			if found.Stored == nil {
				found.Stored = map[TextHash][]float32{}
			}
			found.Stored[h] = vec
		}
		vec = nil
		return nil
	}); err != nil {
		return Claims{}, fmt.Errorf("vectorstore: claim %d texts: %w", len(hashes), err)
	}
	for _, h := range hashes {
		if _, ok := found.Stored[h]; !ok && !mine[h] {
			if found.Elsewhere == nil {
				found.Elsewhere = map[TextHash]bool{}
			}
			found.Elsewhere[h] = true
		}
	}
	return found, nil
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
