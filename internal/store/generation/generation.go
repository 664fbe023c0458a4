package generation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Status is a generation's status in index_generations, one of the values
// its CHECK constraint allows.
type Status string

// Generation statuses.
const (
	// Building is a generation created and not complete yet.
	Building Status = "building"
	// Ready is a complete generation that search does not serve yet.
	Ready Status = "ready"
	// Active is the one generation search serves.
	Active Status = "active"
	// Retired is a generation search served before another was
	// activated; its vectors stay until it is dropped, so activating it
	// again rolls back.
	Retired Status = "retired"
	// Dropped is a generation whose vectors are gone; its row stays for
	// the audit's sake and it can no longer be activated.
	Dropped Status = "dropped"
)

// First is the generation of what the database held before generations
// existed (migration 25), whose vectors are chunk_embeddings.
const First = 1

// Chunking is how a generation's chunks are cut, as the producer's
// CHUNK_SIZE, CHUNK_OVERLAP and CHUNK_UNIT say it.
type Chunking struct {
	Size    int    `json:"size"`
	Overlap int    `json:"overlap"`
	Unit    string `json:"unit"`
}

// Generation is one registered index generation.
type Generation struct {
	ID int `json:"generation"`
	// Model is the provider model that embeds the generation's chunks
	// and its queries. Empty only for generation 1 when nothing was
	// stored at the upgrade: the services' EMBEDDER_MODEL.
	Model string `json:"model"`
	Dims  int    `json:"dims"`
	// Chunking is nil when it was never recorded (generation 1: the
	// producer's settings).
	Chunking *Chunking `json:"chunking"`
	// Recut is a generation whose chunking differs from the producer's:
	// the sources' runs cut its chunks (RecordCuts), instead of its
	// backfill taking generation 1's.
	Recut  bool   `json:"recut"`
	Status Status `json:"status"`
	// Mode is how its backfill embeds: policy.ModeLive through the live
	// endpoint, policy.ModeBatch through the provider's Batch API.
	Mode        string     `json:"mode"`
	CreatedAt   time.Time  `json:"created_at"`
	ActivatedAt *time.Time `json:"activated_at,omitempty"`
	RetiredAt   *time.Time `json:"retired_at,omitempty"`
	DroppedAt   *time.Time `json:"dropped_at,omitempty"`
}

// ErrUnknown is a generation number no generation has.
var ErrUnknown = errors.New("unknown index generation")

// selectSQL reads generations; a statement appends its WHERE.
const selectSQL = `
SELECT generation, model, dims, chunk_size, chunk_overlap, chunk_unit, recut, status, mode, created_at, activated_at, retired_at, dropped_at
FROM index_generations`

func scan(row pgx.CollectableRow) (Generation, error) {
	var g Generation
	var size, overlap *int
	var unit *string
	err := row.Scan(&g.ID, &g.Model, &g.Dims, &size, &overlap, &unit, &g.Recut, &g.Status, &g.Mode, &g.CreatedAt, &g.ActivatedAt, &g.RetiredAt, &g.DroppedAt)
	if size != nil && overlap != nil && unit != nil {
		g.Chunking = &Chunking{Size: *size, Overlap: *overlap, Unit: *unit}
	}
	return g, err
}

// List returns every generation, oldest first.
func List(ctx context.Context, q manifest.Querier) ([]Generation, error) {
	rows, err := q.Query(ctx, selectSQL+` ORDER BY generation`)
	if err != nil {
		return nil, fmt.Errorf("list index generations: %w", err)
	}
	gs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("list index generations: %w", err)
	}
	return gs, nil
}

// Get returns generation id, or an error matching ErrUnknown.
func Get(ctx context.Context, q manifest.Querier, id int) (Generation, error) {
	return one(ctx, q, selectSQL+` WHERE generation = $1`, id)
}

// GetActive returns the active generation. Read it in the transaction
// (a REPEATABLE READ one) that searches it, so that the search and the
// generation are of one snapshot.
func GetActive(ctx context.Context, q manifest.Querier) (Generation, error) {
	g, err := one(ctx, q, selectSQL+` WHERE status = '`+string(Active)+`'`)
	if errors.Is(err, ErrUnknown) {
		return g, errors.New("no index generation is active: the registry is damaged; activate one with sluice index activate G --reason R --execute")
	}
	return g, err
}

// lock reads generation id and locks its row for the rest of tx.
func lock(ctx context.Context, tx pgx.Tx, id int) (Generation, error) {
	return one(ctx, tx, selectSQL+` WHERE generation = $1 FOR UPDATE`, id)
}

func one(ctx context.Context, q manifest.Querier, sql string, args ...any) (Generation, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return Generation{}, fmt.Errorf("read index generation: %w", err)
	}
	g, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		if len(args) > 0 {
			return g, fmt.Errorf("%w %v: see sluice index ls", ErrUnknown, args[0])
		}
		return g, ErrUnknown
	}
	if err != nil {
		return g, fmt.Errorf("read index generation: %w", err)
	}
	return g, nil
}

// Check returns a problem for reconcile unless exactly one generation is
// active, "" when all is well.
func Check(ctx context.Context, q manifest.Querier) (string, error) {
	rows, err := q.Query(ctx, `SELECT generation FROM index_generations WHERE status = '`+string(Active)+`' ORDER BY generation`)
	if err != nil {
		return "", fmt.Errorf("check index generations: %w", err)
	}
	active, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return "", fmt.Errorf("check index generations: %w", err)
	}
	if len(active) != 1 {
		return fmt.Sprintf("%d index generations are active (%v), want exactly 1", len(active), active), nil
	}
	return "", nil
}
