package bulk

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
)

// sweepBatch bounds how many traces of uploads one pass follows.
const sweepBatch = 100

// sweep follows the ledger's traces of uploads it is unsure of (a
// builder killed between an upload and its record, an upload that
// failed on the way back, a refused file it could not delete): it
// deletes every request file uploaded for such a batch that the ledger
// does not use, then clears the trace. A batch a builder is moving is
// left for the next pass: its upload may be under way.
func (p *Poller) sweep(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `SELECT batch_id FROM bulk_batches WHERE upload_requested_at IS NOT NULL ORDER BY batch_id LIMIT $1`, sweepBatch)
	if err != nil {
		return fmt.Errorf("bulk poller: uploads to check: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return err
	}
	p.deps.Metrics.request(opList)
	files, err := p.client.AllFiles(ctx, batchapi.PurposeBatch)
	if err != nil {
		return fmt.Errorf("bulk poller: list the provider's files: %w", err)
	}
	byBatch := map[int64][]string{}
	for _, f := range files {
		if id, ok := uploadBatch(f.Filename); ok {
			byBatch[id] = append(byBatch[id], f.ID)
		}
	}
	var errs []error
	for _, id := range ids {
		if _, err := withLock(ctx, p.pool, id, func() error { return p.sweepBatch(ctx, id, byBatch[id]) }); err != nil {
			errs = append(errs, fmt.Errorf("bulk batch %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// sweepBatch deletes the files of batch id but the one the ledger uses,
// and clears its trace. Requires the batch's lock.
func (p *Poller) sweepBatch(ctx context.Context, id int64, files []string) error {
	bt, err := loadBatch(ctx, p.pool, id)
	if err != nil {
		return err
	}
	if bt.uploadRequestedAt == nil {
		return nil
	}
	for _, f := range files {
		if f == bt.inputFileID {
			continue
		}
		p.deps.Metrics.request(opDelete)
		if err := p.client.DeleteFile(ctx, f); err != nil && !errors.Is(err, batchapi.ErrNotFound) {
			return fmt.Errorf("delete unused request file %s: %w", f, err)
		}
		p.deps.Log.Info().Int64("batch", id).Str("file", f).Msg("bulk request file left by an unrecorded upload deleted")
	}
	if _, err := p.pool.Exec(ctx, `UPDATE bulk_batches SET upload_requested_at = NULL WHERE batch_id = $1 AND upload_requested_at = $2`,
		id, *bt.uploadRequestedAt); err != nil {
		return fmt.Errorf("clear the upload's trace: %w", err)
	}
	return nil
}

// withdraw deletes at the provider the request files that hold the text
// of a document erased since they were uploaded: a batch holds fewer
// lines than it uploaded once every member of a line is erased. A batch
// not yet created goes back to sealed, to be built again without that
// text; a batch the provider runs goes on without its input file, and
// its results for the erased chunks find no member.
func (p *Poller) withdraw(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `
		SELECT b.batch_id FROM bulk_batches b
		WHERE b.input_file_id IS NOT NULL AND b.input_deleted_at IS NULL AND b.files_purged_at IS NULL
		  AND b.state IN ('uploaded', 'created', 'validating', 'in_progress', 'finalizing', 'cancelling')
		  AND b.requests > (SELECT count(DISTINCT m.line_id) FROM bulk_members m WHERE m.batch_id = b.batch_id)
		ORDER BY b.batch_id`)
	if err != nil {
		return fmt.Errorf("bulk poller: batches with erased text: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("bulk poller: batches with erased text: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if _, err := withLock(ctx, p.pool, id, func() error { return p.withdrawBatch(ctx, id) }); err != nil {
			errs = append(errs, fmt.Errorf("bulk batch %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// withdrawBatch deletes batch id's input file and records it. Requires
// the batch's lock.
func (p *Poller) withdrawBatch(ctx context.Context, id int64) error {
	bt, err := loadBatch(ctx, p.pool, id)
	if err != nil || bt.inputFileID == "" {
		return err
	}
	p.deps.Metrics.request(opDelete)
	if err := p.client.DeleteFile(ctx, bt.inputFileID); err != nil && !errors.Is(err, batchapi.ErrNotFound) {
		return fmt.Errorf("delete request file %s holding erased text: %w", bt.inputFileID, err)
	}
	now := p.deps.Now()
	if bt.state == Uploaded && bt.createRequestedAt == nil {
		_, err = p.pool.Exec(ctx, `
			UPDATE bulk_batches SET state = 'sealed', input_file_id = NULL, updated_at = $2
			WHERE batch_id = $1 AND state = 'uploaded' AND create_requested_at IS NULL`, id, now)
	} else {
		_, err = p.pool.Exec(ctx, `UPDATE bulk_batches SET input_deleted_at = $2, updated_at = $2 WHERE batch_id = $1`, id, now)
	}
	if err != nil {
		return fmt.Errorf("record request file %s deleted: %w", bt.inputFileID, err)
	}
	p.deps.Log.Info().Int64("batch", id).Str("file", bt.inputFileID).Msg("bulk request file holding erased text deleted")
	return nil
}
