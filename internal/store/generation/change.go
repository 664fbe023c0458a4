package generation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Actions of the audit, index_generation_audit.action.
const (
	ActionCreate   = "create"
	ActionActivate = "activate"
	ActionDrop     = "drop"
	ActionBuild    = "build"
	// ActionReady is the backfill's: a building generation found
	// complete (mark_generation_ready).
	ActionReady = "ready"
	ActionRetry = "retry"
)

// Request is who asks for a change and why, and whether to make it.
type Request struct {
	// By is who asks: "cli:<user>". Required.
	By string
	// Reason is why, for the audit. Required.
	Reason string
	// Execute makes the change; otherwise it is an audited dry run.
	Execute bool
	// Force activates a generation that still owes or has parked
	// chunks.
	Force bool
}

// Spec is a generation to create.
type Spec struct {
	// Model is the provider model; required.
	Model string
	// Dims is its vectors' dimension, 1..migrations.MaxDims.
	Dims int
	// Chunking is how the generation's chunks are cut.
	Chunking Chunking
	// Mode is how its backfill embeds: policy.ModeLive (the default when
	// empty) or policy.ModeBatch, through the provider's Batch API.
	Mode string
	// Recut makes a generation whose Chunking differs from the
	// producer's: the sources' next runs cut its chunks, since the text
	// generation 1 holds is cut otherwise.
	Recut bool
}

// Validate reports a Spec that cannot be a generation, saying how to fix
// it.
func (s Spec) Validate() error {
	var errs []error
	if s.Model == "" {
		errs = append(errs, errors.New("model is empty: name the provider model, e.g. --model text-embedding-3-large"))
	}
	if s.Dims < 1 || s.Dims > migrations.MaxDims {
		errs = append(errs, fmt.Errorf("dims %d out of range: give the model's output size, 1..%d", s.Dims, migrations.MaxDims))
	}
	c := chunk.Config{Size: s.Chunking.Size, Overlap: s.Chunking.Overlap, Unit: chunk.Unit(s.Chunking.Unit)}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.Mode != "" && s.Mode != policy.ModeLive && s.Mode != policy.ModeBatch {
		errs = append(errs, fmt.Errorf("mode %q: use %s (the live endpoint) or %s (the provider's Batch API, half the price, within hours)", s.Mode, policy.ModeLive, policy.ModeBatch))
	}
	return errors.Join(errs...)
}

func (s Spec) mode() string { return cmp.Or(s.Mode, policy.ModeLive) }

// Errors of the changes that callers branch on.
var (
	// ErrNoReason is a change without a reason.
	ErrNoReason = errors.New("an index change needs a reason: pass --reason, e.g. --reason 'move to the larger model, ticket 123'")
	// ErrIncomplete matches an *IncompleteError.
	ErrIncomplete = errors.New("index generation incomplete")
	// ErrActive is a drop of the active generation.
	ErrActive = errors.New("the active index generation cannot be dropped")
	// ErrDropped is an activation of a dropped generation.
	ErrDropped = errors.New("the index generation was dropped")
	// ErrAlreadyActive is an activation of the active generation.
	ErrAlreadyActive = errors.New("the index generation is already active")
)

// IncompleteError is an activation refused because the generation still
// owes or has parked chunks.
type IncompleteError struct {
	Progress Progress
}

// Error says what is missing and how to go on.
func (e *IncompleteError) Error() string {
	uncut := ""
	if e.Progress.Uncut > 0 {
		uncut = fmt.Sprintf(", %d documents not cut yet (run their sources' producers)", e.Progress.Uncut)
	}
	return fmt.Sprintf("generation %d is incomplete: %d chunks owed, %d parked in it alone, of %d%s (backfill %s); wait until it is complete, or pass --force with a --reason to serve it as it is",
		e.Progress.Generation, e.Progress.Owed, e.Progress.ParkedHere, e.Progress.Chunks, uncut, e.Progress.Backfill)
}

// Is matches ErrIncomplete.
func (e *IncompleteError) Is(target error) bool { return target == ErrIncomplete }

// Change is what a create, activate or drop did, or would do.
type Change struct {
	AuditID    int64  `json:"audit_id"`
	Action     string `json:"action"`
	Generation int    `json:"generation"`
	DryRun     bool   `json:"dry_run"`
	Forced     bool   `json:"forced"`
	// Previous is the generation an activation retired (or would).
	Previous int `json:"previous,omitempty"`
	// Progress is the generation's at the activation.
	Progress *Progress `json:"progress,omitempty"`
	// VectorsDropped counts the vectors a drop removed (or would).
	VectorsDropped int64 `json:"vectors_dropped,omitempty"`
	// Index is the nearest-neighbour index a build made (or would) and a
	// drop removed (or would); IndexExisted says it was there before.
	Index        string `json:"index,omitempty"`
	IndexExisted bool   `json:"index_existed,omitempty"`
	// Retried counts the parked chunks a retry made owed again (or
	// would): Retryable's count.
	Retried int64 `json:"retried,omitempty"`
	// Recut is a created generation that the sources' runs cut.
	Recut bool `json:"recut,omitempty"`
}

// Registry makes changes to the generations, each in one transaction.
type Registry struct {
	pool *pgxpool.Pool
}

// New returns a Registry on pool.
func New(pool *pgxpool.Pool) *Registry { return &Registry{pool: pool} }

func (r Request) check() error {
	if r.Reason == "" {
		return ErrNoReason
	}
	if r.By == "" {
		return errors.New("an index change needs who asks for it")
	}
	return nil
}

// Create registers a new generation, building, numbered after the
// highest so far; a dry run says which number it would get.
func (reg *Registry) Create(ctx context.Context, s Spec, r Request) (Change, error) {
	if err := s.Validate(); err != nil {
		return Change{}, err
	}
	if err := r.check(); err != nil {
		return Change{}, err
	}
	c := Change{Action: ActionCreate, DryRun: !r.Execute, Recut: s.Recut}
	err := pgx.BeginFunc(ctx, reg.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(generation), 0) + 1 FROM index_generations`).Scan(&c.Generation); err != nil {
			return fmt.Errorf("number the new generation: %w", err)
		}
		if r.Execute {
			if _, err := tx.Exec(ctx, `
				INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status, mode, recut)
				VALUES ($1, $2, $3, $4, $5, $6, '`+string(Building)+`', $7, $8)`,
				c.Generation, s.Model, s.Dims, s.Chunking.Size, s.Chunking.Overlap, s.Chunking.Unit, s.mode(), s.Recut); err != nil {
				return fmt.Errorf("create generation %d: %w", c.Generation, err)
			}
		}
		return audit(ctx, tx, &c, r, map[string]any{"model": s.Model, "dims": s.Dims, "chunking": s.Chunking, "mode": s.mode(), "recut": s.Recut})
	})
	return c, err
}

// Activate makes generation id the one search serves and retires the
// active one, in one commit. It refuses a generation that owes or has
// parked chunks (an *IncompleteError) unless r.Force, which the audit
// records. It refuses a dropped one
// (ErrDropped) and the active one (ErrAlreadyActive). Refusals are not
// audited: nothing was asked that could happen.
func (reg *Registry) Activate(ctx context.Context, id int, r Request) (Change, error) {
	return reg.changeOne(ctx, id, ActionActivate, r, func(tx pgx.Tx, g Generation, c *Change) (map[string]any, error) {
		switch g.Status {
		case Active:
			return nil, fmt.Errorf("%w: generation %d; nothing to do", ErrAlreadyActive, id)
		case Dropped:
			return nil, fmt.Errorf("%w: generation %d has no vectors; create a new generation instead", ErrDropped, id)
		}
		p, err := ProgressOf(ctx, tx, g)
		if err != nil {
			return nil, err
		}
		c.Progress = &p
		if !p.Complete() {
			if !r.Force {
				return nil, &IncompleteError{Progress: p}
			}
			c.Forced = true
		}
		// None is active only in a damaged registry; activating one
		// repairs it.
		rows, err := tx.Query(ctx, `SELECT generation FROM index_generations WHERE status = '`+string(Active)+`' FOR UPDATE`)
		if err != nil {
			return nil, fmt.Errorf("read the active generation: %w", err)
		}
		active, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return nil, fmt.Errorf("read the active generation: %w", err)
		}
		if len(active) > 0 {
			c.Previous = active[0]
		}
		if r.Execute {
			if err := switchActive(ctx, tx, id); err != nil {
				return nil, err
			}
		}
		return map[string]any{"previous": c.Previous, "owed": p.Owed, "parked": p.Parked, "stored": p.Stored, "backfill": p.Backfill}, nil
	})
}

// switchActive retires the active generation and activates id. The unique
// index allows one active row at a time, so the retirement goes first;
// the deferred trigger checks at commit that one is active.
func switchActive(ctx context.Context, tx pgx.Tx, id int) error {
	if _, err := tx.Exec(ctx, `
		UPDATE index_generations SET status = '`+string(Retired)+`', retired_at = now()
		WHERE status = '`+string(Active)+`'`); err != nil {
		return fmt.Errorf("retire the active generation: %w", err)
	}
	tag, err := tx.Exec(ctx, `
		UPDATE index_generations SET status = '`+string(Active)+`', activated_at = now(), retired_at = NULL
		WHERE generation = $1 AND status IN ('`+string(Building)+`', '`+string(Ready)+`', '`+string(Retired)+`')`, id)
	if err != nil {
		return fmt.Errorf("activate generation %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("activate generation %d: it changed meanwhile; look again with sluice index ls", id)
	}
	return nil
}

// Drop removes generation id's vectors, and a recut one's cuts with
// their text, and marks it dropped. It refuses
// the active generation (ErrActive) and generation 1, whose vectors the
// pipeline writes (vectorstore.ErrFirstGeneration).
func (reg *Registry) Drop(ctx context.Context, id int, r Request) (Change, error) {
	return reg.changeOne(ctx, id, ActionDrop, r, func(tx pgx.Tx, g Generation, c *Change) (map[string]any, error) {
		var err error
		switch {
		case g.Status == Active:
			return nil, fmt.Errorf("%w: generation %d is what search serves; activate another first (sluice index activate G)", ErrActive, id)
		case g.Status == Dropped:
			return nil, fmt.Errorf("%w: generation %d, already; nothing to do", ErrDropped, id)
		case g.ID == First:
			return nil, fmt.Errorf("generation 1 cannot be dropped: its vectors are chunk_embeddings, which the pipeline writes (%w)", vectorstore.ErrFirstGeneration)
		}
		if c.IndexExisted, err = vectorstore.HasGenerationIndex(ctx, tx, id); err != nil {
			return nil, err
		}
		if c.IndexExisted {
			c.Index = vectorstore.GenerationIndex(id)
		}
		if r.Execute {
			// The index goes first: the delete need not maintain it.
			if _, err := vectorstore.DropGenerationIndex(ctx, tx, id); err != nil {
				return nil, err
			}
			if c.VectorsDropped, err = vectorstore.DropGeneration(ctx, tx, id); err != nil {
				return nil, err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM generation_documents WHERE generation = $1`, id); err != nil {
				return nil, fmt.Errorf("drop generation %d's cuts: %w", id, err)
			}
			if _, err := tx.Exec(ctx, `
				UPDATE index_generations SET status = '`+string(Dropped)+`', dropped_at = now() WHERE generation = $1`, id); err != nil {
				return nil, fmt.Errorf("drop generation %d: %w", id, err)
			}
		} else if c.VectorsDropped, err = countVectors(ctx, tx, id); err != nil {
			return nil, err
		}
		return map[string]any{"status": g.Status, "vectors": c.VectorsDropped, "index": c.Index}, nil
	})
}

// Build builds generation id's nearest-neighbour index
// (vectorstore.BuildGenerationIndex) unless it exists; a dry run says
// whether it would. It refuses generation 1, whose index is
// chunk_embeddings', and a dropped generation (ErrDropped). The build
// holds a lock that blocks writes to every later generation's vectors
// until it commits: build after a generation's backfill, before
// activating it.
func (reg *Registry) Build(ctx context.Context, id int, r Request) (Change, error) {
	return reg.changeOne(ctx, id, ActionBuild, r, func(tx pgx.Tx, g Generation, c *Change) (map[string]any, error) {
		c.Index = vectorstore.GenerationIndex(id)
		var err error
		switch {
		case g.ID == First:
			return nil, fmt.Errorf("generation 1's vectors are chunk_embeddings, whose index (%s) the schema's owner builds (%w)", vectorstore.HNSWIndex, vectorstore.ErrFirstGeneration)
		case g.Status == Dropped:
			return nil, fmt.Errorf("%w: generation %d has no vectors to index", ErrDropped, id)
		}
		if c.IndexExisted, err = vectorstore.HasGenerationIndex(ctx, tx, id); err != nil {
			return nil, err
		}
		if r.Execute && !c.IndexExisted {
			if _, err := vectorstore.BuildGenerationIndex(ctx, tx, id); err != nil {
				return nil, err
			}
		}
		return map[string]any{"index": c.Index, "existed": c.IndexExisted, "dims": g.Dims}, nil
	})
}

// Retry clears the chunks generation id parked (generation_parked), so
// that its backfill owes them again and embeds them on its next pass; a
// dry run counts them. Retried counts the chunks that are owed again,
// Retryable's count (the parked rows of older versions are cleared too,
// uncounted). Chunks parked in the manifest are every generation's:
// sluice dlq replay retries those. It refuses generation 1, which parks
// in the manifest, and a dropped generation.
func (reg *Registry) Retry(ctx context.Context, id int, r Request) (Change, error) {
	return reg.changeOne(ctx, id, ActionRetry, r, func(tx pgx.Tx, g Generation, c *Change) (map[string]any, error) {
		switch {
		case g.ID == First:
			return nil, fmt.Errorf("generation 1 parks in the manifest: retry its chunks with sluice dlq replay (%w)", vectorstore.ErrFirstGeneration)
		case g.Status == Dropped:
			return nil, fmt.Errorf("%w: generation %d has nothing to retry", ErrDropped, id)
		}
		n, err := Retryable(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		c.Retried = n
		if r.Execute {
			if _, err := tx.Exec(ctx, `DELETE FROM generation_parked WHERE generation = $1`, id); err != nil {
				return nil, fmt.Errorf("retry generation %d's parked chunks: %w", id, err)
			}
		}
		return map[string]any{"retried": c.Retried}, nil
	})
}

// changeOne runs one audited change of generation id in one
// transaction, with its registry row locked: do refuses, or makes the
// change when r.Execute, and returns the audit's detail. Refusals are not
// audited.
func (reg *Registry) changeOne(ctx context.Context, id int, action string, r Request,
	do func(tx pgx.Tx, g Generation, c *Change) (map[string]any, error)) (Change, error) {
	if err := r.check(); err != nil {
		return Change{}, err
	}
	c := Change{Action: action, Generation: id, DryRun: !r.Execute}
	err := pgx.BeginFunc(ctx, reg.pool, func(tx pgx.Tx) error {
		g, err := lock(ctx, tx, id)
		if err != nil {
			return err
		}
		detail, err := do(tx, g, &c)
		if err != nil {
			return err
		}
		return audit(ctx, tx, &c, r, detail)
	})
	return c, err
}

// audit records c in index_generation_audit and sets its AuditID.
func audit(ctx context.Context, tx pgx.Tx, c *Change, r Request, detail map[string]any) error {
	raw, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("audit index %s: %w", c.Action, err)
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO index_generation_audit (generation, action, requested_by, reason, dry_run, forced, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING audit_id`,
		c.Generation, c.Action, r.By, r.Reason, c.DryRun, c.Forced, raw).Scan(&c.AuditID)
	if err != nil {
		return fmt.Errorf("audit index %s: %w", c.Action, err)
	}
	return nil
}
