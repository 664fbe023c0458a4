package bulk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk/view"
)

// Poller follows the batches the provider has, and settles those that
// ended: it applies a batch's output and error files in slices, each in
// one transaction with the ledger's record of the lines applied, and hands
// every member left without a result back as owed work. A poller killed
// at any point leaves a batch a fresh one resumes from the ledger: a
// half-applied file resumes after its last applied slice, and a line
// applied again changes nothing. It is safe for concurrent use, and
// pollers in several processes move different batches.
type Poller struct {
	cfg      Config
	deps     Deps
	pool     *pgxpool.Pool
	client   *batchapi.Client
	applier  Applier
	requeuer Requeuer
}

// NewPoller returns a poller of the batches in pool's ledger, asking
// client, applying results through applier and handing owed work to
// requeuer.
func NewPoller(pool *pgxpool.Pool, client *batchapi.Client, applier Applier, requeuer Requeuer, cfg Config, deps Deps) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if applier == nil || requeuer == nil {
		return nil, errors.New("bulk: a poller needs an Applier and a Requeuer")
	}
	cfg.applyDefaults()
	deps.applyDefaults()
	return &Poller{cfg: cfg, deps: deps, pool: pool, client: client, applier: applier, requeuer: requeuer}, nil
}

// Pass follows every batch at the provider once, and settles every batch
// that ended. A batch that fails keeps its last error and is tried again
// on the next pass; Pass returns every failure.
func (p *Poller) Pass(ctx context.Context) error {
	ids, err := batchIDs(ctx, p.pool, Created, Validating, InProgress, Finalizing, Cancelling,
		Completed, Failed, Expired, Cancelled, Lost)
	if err != nil {
		return fmt.Errorf("bulk poller: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if _, err := withLock(ctx, p.pool, id, func() error { return p.follow(ctx, id) }); err != nil {
			if crashed(err) {
				return err
			}
			recordError(ctx, p.pool, id, p.deps.Now(), err)
			errs = append(errs, fmt.Errorf("bulk batch %d: %w", id, err))
		}
	}
	for _, step := range []func(context.Context) error{p.withdraw, p.sweep, p.purge} {
		if err := step(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.count(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// purgeBatch bounds how many settled batches one pass purges.
const purgeBatch = 100

// purge deletes at the provider the files of batches that settled: the
// request file holds every member's text, and the ledger needs none of
// them once a batch is settled. A file the provider no longer has is
// gone already; a batch whose files could not all be deleted is tried
// again on the next pass.
func (p *Poller) purge(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `
		SELECT batch_id, coalesce(input_file_id, ''), coalesce(output_file_id, ''), coalesce(error_file_id, '')
		FROM bulk_batches WHERE files_purged_at IS NULL AND state IN ('applied', 'requeued')
		ORDER BY batch_id LIMIT $1`, purgeBatch)
	if err != nil {
		return fmt.Errorf("bulk poller: batches to purge: %w", err)
	}
	type files struct {
		ID                    int64
		Input, Output, Errors string
	}
	settled, err := pgx.CollectRows(rows, pgx.RowToStructByPos[files])
	if err != nil {
		return fmt.Errorf("bulk poller: batches to purge: %w", err)
	}
	var errs []error
	for _, b := range settled {
		var failed bool
		for _, id := range []string{b.Input, b.Output, b.Errors} {
			if id == "" {
				continue
			}
			p.deps.Metrics.request(opDelete)
			if err := p.client.DeleteFile(ctx, id); err != nil && !errors.Is(err, batchapi.ErrNotFound) {
				errs = append(errs, fmt.Errorf("bulk batch %d: delete file %s: %w", b.ID, id, err))
				failed = true
			}
		}
		if failed {
			continue
		}
		if _, err := p.pool.Exec(ctx, `UPDATE bulk_batches SET files_purged_at = $2 WHERE batch_id = $1`, b.ID, p.deps.Now()); err != nil {
			errs = append(errs, fmt.Errorf("bulk batch %d: record its files deleted: %w", b.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs a pass at once and then every Config.Interval until ctx ends.
func (p *Poller) Run(ctx context.Context) {
	every(ctx, p.cfg.Interval, func() {
		if err := p.Pass(ctx); err != nil && ctx.Err() == nil {
			p.deps.Log.Warn().Err(err).Msg("bulk poller pass")
		}
	})
}

func (p *Poller) follow(ctx context.Context, id int64) error {
	bt, err := loadBatch(ctx, p.pool, id)
	if err != nil {
		return err
	}
	if atProvider(bt.state) {
		if bt, err = p.poll(ctx, bt); err != nil {
			return err
		}
	}
	if !ended(bt.state) {
		return nil
	}
	if hasFiles(bt.state) {
		err := p.applyFiles(ctx, bt)
		switch {
		case errors.Is(err, errFileLost):
			if err := p.markLost(ctx, bt, err); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
	if err := p.deps.crash(CrashApplied); err != nil {
		return err
	}
	return p.settle(ctx, bt.id)
}

// errFileLost is a result file the provider no longer has: a provider
// restarted, or one that expired the file before it was read.
var errFileLost = errors.New("the provider no longer has the result file")

// applyFiles applies the output file, then the error file, of a batch
// that ended.
func (p *Poller) applyFiles(ctx context.Context, bt *batch) error {
	if bt.outputFileID != "" {
		if err := p.applyFile(ctx, bt, bt.outputFileID, "output_lines_done", bt.outputDone); err != nil {
			return fmt.Errorf("apply output file %s: %w", bt.outputFileID, err)
		}
	}
	if bt.errorFileID != "" {
		if err := p.applyFile(ctx, bt, bt.errorFileID, "error_lines_done", bt.errorDone); err != nil {
			return fmt.Errorf("apply error file %s: %w", bt.errorFileID, err)
		}
	}
	return nil
}

// markLost records that a batch's results are lost at the provider with
// what was applied of them: settling it hands its members still pending
// on as owed work, as for a batch the provider lost.
func (p *Poller) markLost(ctx context.Context, bt *batch, cause error) error {
	if _, err := p.pool.Exec(ctx, `
		UPDATE bulk_batches SET state = $2, outcome = $6, last_error = $3, updated_at = $4 WHERE batch_id = $1 AND state = $5`,
		bt.id, Lost, cause.Error(), p.deps.Now(), bt.state, view.OutcomeOutputLost); err != nil {
		return fmt.Errorf("record batch lost: %w", err)
	}
	p.deps.Log.Warn().Int64("batch", bt.id).Str("provider_batch", bt.providerID).Err(cause).
		Msg("bulk batch results lost at the provider; its unanswered members are owed again")
	bt.state = Lost
	return nil
}

// poll asks the provider about a batch and records what it says.
func (p *Poller) poll(ctx context.Context, bt *batch) (*batch, error) {
	p.deps.Metrics.request(opGet)
	pb, err := p.client.Batch(ctx, bt.providerID)
	var next State
	var detail, code, message string
	switch {
	case errors.Is(err, batchapi.ErrNotFound):
		next = Lost
	case err != nil:
		return nil, err
	default:
		if bt.cancelRequested && (pb.Status == batchapi.StatusValidating || pb.Status == batchapi.StatusInProgress) {
			p.deps.Metrics.request(opCancel)
			if c, err := p.client.CancelBatch(ctx, bt.providerID); err == nil {
				pb = c
			}
		}
		var ok bool
		if next, ok = fromProvider(pb.Status); !ok {
			return nil, fmt.Errorf("provider batch %s has status %q, which the ledger does not know", bt.providerID, pb.Status)
		}
		if pb.Errors != nil {
			msgs := make([]string, 0, len(pb.Errors.Data))
			for _, e := range pb.Errors.Data {
				msgs = append(msgs, e.Code+": "+e.Message)
			}
			detail = strings.Join(msgs, "; ")
			if len(pb.Errors.Data) > 0 {
				code, message = pb.Errors.Data[0].Code, pb.Errors.Data[0].Message
			}
		}
		bt.outputFileID, bt.errorFileID = pb.OutputFileID, pb.ErrorFileID
	}
	if err := p.deps.crash(CrashPolled); err != nil {
		return nil, err
	}
	if next == bt.state {
		return bt, nil
	}
	now := p.deps.Now()
	if _, err := p.pool.Exec(ctx, `
		UPDATE bulk_batches SET state = $2, output_file_id = nullif($3, ''), error_file_id = nullif($4, ''),
		       finished_at = CASE WHEN $5 THEN $6::timestamptz END, last_error = nullif($7, ''), updated_at = $6,
		       error_code = coalesce(nullif($9, ''), error_code), error_message = coalesce(nullif($10, ''), error_message),
		       members = `+countMembers+`
		WHERE batch_id = $1 AND state = $8`,
		bt.id, next, bt.outputFileID, bt.errorFileID, ended(next), now, detail, bt.state, code, message); err != nil {
		return nil, fmt.Errorf("record status %s: %w", next, err)
	}
	p.deps.Log.Info().Int64("batch", bt.id).Str("provider_batch", bt.providerID).Str("from", string(bt.state)).
		Str("to", string(next)).Msg("bulk batch moved")
	bt.state, bt.lastError = next, detail
	return bt, nil
}

// applyFile reads a result file after its first done lines and applies it
// a slice at a time. A file the provider no longer has is errFileLost.
func (p *Poller) applyFile(ctx context.Context, bt *batch, fileID, cursor string, done int) error {
	sp, err := p.cfg.space(ctx, bt.generation)
	if err != nil {
		return err
	}
	p.deps.Metrics.request(opContent)
	rc, err := p.client.FileContent(ctx, fileID)
	if errors.Is(err, batchapi.ErrNotFound) {
		return fmt.Errorf("%w: %w", errFileLost, err)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	r := batchapi.NewReader(rc, batchapi.ReaderConfig{Dims: sp.Dims})
	var slice []batchapi.Result
	last := done
	flush := func() error {
		if last <= done {
			return nil
		}
		if err := p.applySlice(ctx, bt.id, cursor, slice, last); err != nil {
			return err
		}
		slice, done = slice[:0], last
		return p.deps.crash(CrashSliceApplied)
	}
	for {
		res, err := r.Next()
		if errors.Is(err, io.EOF) {
			return flush()
		}
		var le *batchapi.LineError
		if errors.As(err, &le) {
			// Its member, if any, stays pending and is owed work when
			// the batch settles.
			if le.Line > done {
				last = le.Line
				p.deps.Log.Warn().Int64("batch", bt.id).Str("file", fileID).Int("line", le.Line).Err(le.Err).Msg("bulk result line unreadable")
			}
			continue
		}
		if err != nil {
			return err
		}
		if res.Line <= done {
			continue
		}
		slice, last = append(slice, res), res.Line
		if len(slice) >= p.cfg.SliceSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}
