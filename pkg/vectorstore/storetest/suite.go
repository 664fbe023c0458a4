package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Run runs the conformance suite. newStore gives one subtest a store and a
// pool on a fresh database migrated for the store's dimension: empty
// chunk_embeddings and documents tables that no other subtest touches. It is
// called once per subtest, and subtests run in parallel. The DB must also be
// able to begin transactions (as *pgxpool.Pool can) and must allow at least
// three connections, for the transactional cases. Dimensions of 4 or more are
// needed; small ones such as 8 keep the suite fast.
func Run(t *testing.T, newStore func(t *testing.T) (vectorstore.Store, vectorstore.DB)) {
	RunWith(t, Features{}, newStore)
}

// Features says where a store under test keeps its rows, for the cases
// that read them back directly, and what it does not do. The zero
// Features is chunk_embeddings' store.
type Features struct {
	// Table holds the store's rows. Defaults to chunk_embeddings.
	Table string
	// Where keeps the store's rows of Table, such as "generation = 2" for
	// an index generation's store. Defaults to every row.
	Where string
	// NoRetain is a store that keeps no served version aside: Retain and
	// Release must return an error, and search serves no retained row.
	NoRetain bool
}

// RunWith runs the conformance suite on a store with features f; see Run.
func RunWith(t *testing.T, f Features, newStore func(t *testing.T) (vectorstore.Store, vectorstore.DB)) {
	if f.Table == "" {
		f.Table = "chunk_embeddings"
	}
	if f.Where == "" {
		f.Where = "true"
	}
	retain := struct {
		name string
		run  func(t *testing.T, b *bundle)
	}{"RetainServesOldVersion", testRetainServesOldVersion}
	if f.NoRetain {
		retain.name, retain.run = "RetainRefused", testRetainRefused
	}
	cases := []struct {
		name string
		run  func(t *testing.T, b *bundle)
	}{
		{"RoundTripExactValues", testRoundTrip},
		{"EmptyBatch", testEmptyBatch},
		{"OutcomesInInputOrder", testOutcomesInInputOrder},
		{"SameVersionAndHashIsUnchanged", testUnchanged},
		{"NewerVersionUpdates", testNewerVersion},
		{"OlderVersionIsStale", testOlderVersion},
		{"ChangedHashSameVersionUpdates", testChangedHash},
		{"WrongDimsIsRecordError", testWrongDims},
		{"NonFiniteIsRecordError", testNonFinite},
		{"UnstorableFieldsAreRecordErrors", testUnstorableFields},
		{"DuplicateKeyInBatch", testDuplicateKey},
		{"LargeBatchInOneCall", testLargeBatch},
		{"ConcurrentBatches", testConcurrentBatches},
		{"ConcurrentWriterCommitsFirst", testConcurrentWriter},
		{"RolledBackTransactionLeavesNothing", testRollback},
		{"PruneVersion", testPrune},
		{"SearchNearestFirst", testSearchOrder},
		{"SearchOnlyReadyCurrentVersion", testSearchVisibility},
		{"SearchSourceAndK", testSearchSourceAndK},
		{"SearchRejectsBadQueries", testSearchValidation},
		retain,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store, db := newStore(t)
			if store.Dims() < 4 {
				t.Fatalf("storetest needs a store of at least 4 dimensions, got %d", store.Dims())
			}
			c.run(t, &bundle{ctx: t.Context(), store: store, db: db, dims: store.Dims(), features: f})
		})
	}
}

// bundle is what every case works with.
type bundle struct {
	ctx      context.Context
	store    vectorstore.Store
	db       vectorstore.DB
	dims     int
	features Features
}

// rows names the store's rows for a statement: its table and the
// condition that keeps them, to follow with AND.
func (b *bundle) rows() string { return b.features.Table + " WHERE " + b.features.Where }

// beginner is the part of a pool or connection the transactional cases need.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

func (b *bundle) begin(t *testing.T) pgx.Tx {
	t.Helper()
	bg, ok := b.db.(beginner)
	if !ok {
		t.Fatalf("storetest: the DB given for the suite (%T) cannot begin transactions: return a *pgxpool.Pool", b.db)
	}
	tx, err := bg.Begin(b.ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}
