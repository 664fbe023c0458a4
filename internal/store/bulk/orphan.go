package bulk

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
)

// Orphans lists the request files Sluice uploaded (named by UploadName)
// that the provider holds and no batch of the ledger uses: not the input
// file of a batch whose files are still wanted, nor a file of a batch
// whose upload the ledger is unsure of (the poller follows those). Each
// holds chunk text that should not outlive its batch. It needs to read
// bulk_batches (sluice_operator).
func Orphans(ctx context.Context, q Querier, client *batchapi.Client) ([]batchapi.File, error) {
	files, err := client.AllFiles(ctx, batchapi.PurposeBatch)
	if err != nil {
		return nil, fmt.Errorf("bulk: list the provider's files: %w", err)
	}
	rows, err := q.Query(ctx, `
		SELECT coalesce(input_file_id, ''), upload_requested_at IS NOT NULL, batch_id FROM bulk_batches
		WHERE upload_requested_at IS NOT NULL
		   OR (input_file_id IS NOT NULL AND files_purged_at IS NULL AND input_deleted_at IS NULL)`)
	if err != nil {
		return nil, fmt.Errorf("bulk: read the files batches use: %w", err)
	}
	used, unsure := map[string]bool{}, map[int64]bool{}
	var fileID string
	var traced bool
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&fileID, &traced, &id}, func() error {
		used[fileID] = fileID != ""
		if traced {
			unsure[id] = true
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("bulk: read the files batches use: %w", err)
	}
	var out []batchapi.File
	for _, f := range files {
		id, ok := uploadBatch(f.Filename)
		if ok && !used[f.ID] && !unsure[id] {
			out = append(out, f)
		}
	}
	return out, nil
}

// DeleteOrphans deletes files at the provider, such as those Orphans
// listed, and returns how many it deleted; a file already gone counts as
// deleted.
func DeleteOrphans(ctx context.Context, client *batchapi.Client, files []batchapi.File) (int, error) {
	var n int
	var errs []error
	for _, f := range files {
		if err := client.DeleteFile(ctx, f.ID); err != nil && !errors.Is(err, batchapi.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete %s (%s): %w", f.ID, f.Filename, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
