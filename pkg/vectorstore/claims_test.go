package vectorstore_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// A claim on a text is one owner's per generation: another owner sees it
// held until it is released or older than the time to live it claims
// with; the owner renews its own; a repeated hash is claimed once; the
// sweep deletes only expired claims. Run as the consumer and the
// replayer, the roles that claim.
func TestAClaimHoldsATextForOneOwnerUntilReleasedOrExpired(t *testing.T) {
	t.Parallel()
	first, second, db := openGenerations(t, testenv.DefaultBackend)
	ctx := t.Context()
	a, b, c := vectorstore.HashText("a"), vectorstore.HashText("b"), vectorstore.HashText("c")
	for _, role := range []string{migrations.ConsumerRole, migrations.ReplayerRole} {
		conn := db.RolePool(t, role)
		claim := func(s *vectorstore.Postgres, owner string, ttl time.Duration, hashes ...vectorstore.TextHash) []vectorstore.TextHash {
			t.Helper()
			found, err := s.ClaimTexts(ctx, conn, owner, "m", hashes, ttl)
			if err != nil || len(found.Stored) != 0 {
				t.Fatalf("as %s, %s claims: %d stored, %v", role, owner, len(found.Stored), err)
			}
			return slices.SortedFunc(maps.Keys(found.Elsewhere), func(x, y vectorstore.TextHash) int { return slices.Compare(x[:], y[:]) })
		}
		want := func(what string, got []vectorstore.TextHash, hashes ...vectorstore.TextHash) {
			t.Helper()
			slices.SortFunc(hashes, func(x, y vectorstore.TextHash) int { return slices.Compare(x[:], y[:]) })
			if !slices.Equal(got, hashes) {
				t.Errorf("as %s, %s: held elsewhere %x, want %x", role, what, got, hashes)
			}
		}
		want("a first claim", claim(first, "p1", time.Minute, a, b, a))
		want("another owner", claim(first, "p2", time.Minute, a, b, c), a, b)
		want("the owner again", claim(first, "p1", time.Minute, a, b))
		want("another generation", claim(second, "p2", time.Minute, a, b))
		if err := first.ReleaseTexts(ctx, conn, "p2", []vectorstore.TextHash{a}); err != nil {
			t.Fatal(err)
		}
		want("after another owner's release", claim(first, "p2", time.Minute, a), a)
		if err := first.ReleaseTexts(ctx, conn, "p1", []vectorstore.TextHash{a}); err != nil {
			t.Fatal(err)
		}
		want("after the owner's release", claim(first, "p2", time.Minute, a))
		if _, err := db.Pool.Exec(ctx, `UPDATE text_claims SET claimed_at = now() - interval '2 minutes' WHERE claimed_by = 'p1'`); err != nil {
			t.Fatal(err)
		}
		want("expired claims", claim(first, "p2", time.Minute, b))
		n, err := vectorstore.SweepTextClaims(ctx, conn, time.Minute)
		if err != nil || n != 0 {
			t.Errorf("as %s: swept %d (%v), want nothing: every claim left is p2's and fresh", role, n, err)
		}
		if _, err := db.Pool.Exec(ctx, `UPDATE text_claims SET claimed_at = now() - interval '2 minutes' WHERE text_hash = $1`, c[:]); err != nil {
			t.Fatal(err)
		}
		if n, err := vectorstore.CountTextClaims(ctx, conn, time.Minute); err != nil || n != 1 {
			t.Errorf("as %s: %d claims older than a minute (%v), want 1", role, n, err)
		}
		if n, err := vectorstore.SweepTextClaims(ctx, conn, time.Minute); err != nil || n != 1 {
			t.Errorf("as %s: swept %d (%v), want the one expired claim", role, n, err)
		}
		if _, err := db.Pool.Exec(ctx, `DELETE FROM text_claims`); err != nil {
			t.Fatal(err)
		}
	}
}

// A text whose vector is stored is not claimed: the claim returns the
// vector instead, in the same statement, so that a text another process
// stored and released after the batch's lookup is not paid for again.
// A vector of another model does not answer, nor one of another
// generation.
func TestAClaimFindsTheTextsStoredMeanwhile(t *testing.T) {
	t.Parallel()
	first, second, db := openGenerations(t, testenv.DefaultBackend)
	ctx := t.Context()
	vec := make([]float32, testDims)
	vec[0] = 1
	if _, err := first.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", vec)}); err != nil {
		t.Fatal(err)
	}
	stored, other := vectorstore.HashText("a text"), vectorstore.HashText("another text")
	conn := db.RolePool(t, migrations.ConsumerRole)
	found, err := first.ClaimTexts(ctx, conn, "p1", "m", []vectorstore.TextHash{stored, other}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := found.Stored[stored]; len(found.Stored) != 1 || !slices.Equal(got, vec) || len(found.Elsewhere) != 0 {
		t.Errorf("claim of a stored text and another: stored %v, elsewhere %v; want the stored one's vector alone", found.Stored, found.Elsewhere)
	}
	rows, _ := db.Pool.Query(ctx, `SELECT generation || ':' || (text_hash = $1) FROM text_claims ORDER BY 1`, other[:])
	claims, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(claims, []string{"1:true"}) {
		t.Errorf("claims held %v (%v), want the unstored text's alone", claims, err)
	}
	for what, claim := range map[string]func() (vectorstore.Claims, error){
		"another model": func() (vectorstore.Claims, error) {
			return first.ClaimTexts(ctx, conn, "p2", "other", []vectorstore.TextHash{stored}, time.Minute)
		},
		"another generation": func() (vectorstore.Claims, error) {
			return second.ClaimTexts(ctx, conn, "p2", "m", []vectorstore.TextHash{stored}, time.Minute)
		},
	} {
		if found, err := claim(); err != nil || len(found.Stored)+len(found.Elsewhere) != 0 {
			t.Errorf("%s: stored %v, elsewhere %v (%v), want the text claimed", what, found.Stored, found.Elsewhere, err)
		}
	}
}
