package bulk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
)

// Metadata keys of a provider batch: the ledger's id for it, by which a
// builder that died after creating it finds it again.
const (
	MetaBatch      = "sluice_bulk_batch"
	MetaGeneration = "sluice_generation"
)

// findWindow is how far before the ledger's create request a provider
// batch may have been created and still be the one it asked for: room for
// clock skew between the ledger and the provider.
const findWindow = time.Hour

// Builder sends sealed batches to the provider: it writes the request
// file, uploads it and creates the batch, recording each step in the
// ledger as it ends. A builder killed at any step leaves a batch a fresh
// one resumes: a file uploaded but not recorded is uploaded again
// (harmless), and a batch created but not recorded is found by its
// metadata rather than created twice. It is safe for concurrent use, and
// builders in several processes move different batches.
type Builder struct {
	cfg    Config
	deps   Deps
	pool   *pgxpool.Pool
	client *batchapi.Client
	ledger *Ledger
}

// NewBuilder returns a builder of the batches in pool's ledger, sent
// through client.
func NewBuilder(pool *pgxpool.Pool, client *batchapi.Client, cfg Config, deps Deps) (*Builder, error) {
	ledger, err := NewLedger(cfg, deps)
	if err != nil {
		return nil, err
	}
	return &Builder{cfg: ledger.cfg, deps: ledger.deps, pool: pool, client: client, ledger: ledger}, nil
}

// Pass seals the batches old enough, then takes every sealed or uploaded
// batch as far as created. A batch that fails keeps its last error and is
// tried again on the next pass; Pass returns every failure.
func (b *Builder) Pass(ctx context.Context) error {
	if _, err := b.ledger.SealDue(ctx, b.pool); err != nil {
		return err
	}
	ids, err := batchIDs(ctx, b.pool, Sealed, Uploaded)
	if err != nil {
		return fmt.Errorf("bulk builder: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if _, err := withLock(ctx, b.pool, id, func() error { return b.send(ctx, id) }); err != nil {
			if crashed(err) {
				return err
			}
			recordError(ctx, b.pool, id, b.deps.Now(), err)
			errs = append(errs, fmt.Errorf("bulk batch %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs a pass at once and then every Config.Interval until ctx ends.
func (b *Builder) Run(ctx context.Context) {
	every(ctx, b.cfg.Interval, func() {
		if err := b.Pass(ctx); err != nil && ctx.Err() == nil {
			b.deps.Log.Warn().Err(err).Msg("bulk builder pass")
		}
	})
}

// send takes one batch from where the ledger says it is to created.
func (b *Builder) send(ctx context.Context, id int64) error {
	bt, err := loadBatch(ctx, b.pool, id)
	if err != nil {
		return err
	}
	if bt.state == Sealed {
		if bt.cancelRequested {
			return b.cancelUnsent(ctx, bt)
		}
		if bt.requests == 0 {
			// Every member was a duplicate: nothing to send.
			return b.settleEmpty(ctx, id)
		}
		if err := b.upload(ctx, bt); err != nil {
			return err
		}
		if bt, err = loadBatch(ctx, b.pool, id); err != nil {
			return err
		}
	}
	if bt.state != Uploaded {
		return nil
	}
	return b.create(ctx, bt)
}

// upload writes the batch's request file and uploads it. The ledger
// records that an upload is under way before it starts: a process killed
// before the upload is recorded leaves that trace, and the poller deletes
// the file it may have left (sweep).
func (b *Builder) upload(ctx context.Context, bt *batch) error {
	f, err := os.CreateTemp("", "sluice-bulk-*.jsonl")
	if err != nil {
		return fmt.Errorf("request file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	lines, err := b.build(ctx, bt, f)
	if err != nil {
		return err
	}
	if lines == 0 {
		// Every member was erased since it was admitted.
		return b.settleEmpty(ctx, bt.id)
	}
	if err := b.deps.crash(CrashBuilt); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("request file: %w", err)
	}
	// An earlier upload the ledger is unsure of keeps its trace until
	// the poller has looked for its file.
	unsure := bt.uploadRequestedAt != nil
	if !unsure {
		if _, err := b.pool.Exec(ctx, `UPDATE bulk_batches SET upload_requested_at = $2, updated_at = $2 WHERE batch_id = $1`,
			bt.id, b.deps.Now()); err != nil {
			return fmt.Errorf("record upload request: %w", err)
		}
	}
	b.deps.Metrics.request(opUpload)
	file, err := b.client.UploadFile(ctx, UploadName(bt.id), f)
	if err != nil {
		return err
	}
	if err := b.deps.crash(CrashUploaded); err != nil {
		return err
	}
	now := b.deps.Now()
	if _, err := b.pool.Exec(ctx, `
		UPDATE bulk_batches SET state = 'uploaded', input_file_id = $2, uploaded_at = $3, updated_at = $3, last_error = NULL,
		       requests = $4, inputs = $4, upload_requested_at = CASE WHEN $5 THEN upload_requested_at END, members = `+countMembers+`
		WHERE batch_id = $1 AND state = 'sealed'`, bt.id, file.ID, now, lines, unsure); err != nil {
		return fmt.Errorf("record upload: %w", err)
	}
	b.deps.Metrics.lines.WithLabelValues().Add(float64(lines))
	b.deps.Log.Info().Int64("batch", bt.id).Str("file", file.ID).Int("requests", lines).Msg("bulk batch uploaded")
	return nil
}

// uploadPrefix starts the name of every request file the builder
// uploads.
const uploadPrefix = "sluice-bulk-"

// UploadName is the name batch id's request file is uploaded under:
// the poller and reconcile tell Sluice's uploads, and their batch, by
// it.
func UploadName(id int64) string { return uploadPrefix + strconv.FormatInt(id, 10) + ".jsonl" }

// uploadBatch is the ledger batch a request file was uploaded for, by its
// name, and false for a file Sluice did not upload.
func uploadBatch(name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, uploadPrefix)
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".jsonl")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0
}

// settleEmpty settles a sealed batch with no member to send: there is
// nothing to apply or hand back.
func (b *Builder) settleEmpty(ctx context.Context, id int64) error {
	_, err := b.pool.Exec(ctx, `UPDATE bulk_batches SET state = 'applied', settled_at = $2, updated_at = $2
		WHERE batch_id = $1 AND state = 'sealed'`, id, b.deps.Now())
	return err
}

// build writes the request file of the batch's members to w, one request
// per line (distinct text) in its generation's space, and returns how
// many it wrote. Any pending member of a line gives its text: they are
// the same.
func (b *Builder) build(ctx context.Context, bt *batch, w io.Writer) (int, error) {
	sp, err := b.cfg.space(ctx, bt.generation)
	if err != nil {
		return 0, err
	}
	fb, err := batchapi.NewBuilder(w, batchapi.BuilderConfig{
		Model: sp.Model, Dims: sp.Dims, Encoding: b.cfg.Encoding, Limits: b.cfg.Limits, Counter: sp.Counter})
	if err != nil {
		return 0, err
	}
	rows, err := b.pool.Query(ctx, `
		SELECT DISTINCT ON (line_id) line_id, text FROM bulk_members
		WHERE batch_id = $1 AND state = 'pending' ORDER BY line_id, custom_id`, bt.id)
	if err != nil {
		return 0, fmt.Errorf("read members: %w", err)
	}
	defer rows.Close()
	var lineID, text string
	for rows.Next() {
		if err := rows.Scan(&lineID, &text); err != nil {
			return 0, fmt.Errorf("read members: %w", err)
		}
		if err := fb.Add(lineID, []string{text}); err != nil {
			return 0, fmt.Errorf("build request file: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read members: %w", err)
	}
	return fb.Requests(), nil
}

// create creates the provider batch of an uploaded file, unless an
// earlier attempt did.
func (b *Builder) create(ctx context.Context, bt *batch) error {
	if bt.createRequestedAt != nil {
		found, err := b.find(ctx, bt)
		if err != nil {
			return err
		}
		if found != nil {
			return b.recordCreated(ctx, bt, found)
		}
	}
	if bt.cancelRequested {
		return b.cancelUnsent(ctx, bt)
	}
	now := b.deps.Now()
	tag, err := b.pool.Exec(ctx, `
		UPDATE bulk_batches SET create_requested_at = $2, updated_at = $2
		WHERE batch_id = $1 AND state = 'uploaded' AND cancel_requested_at IS NULL`, bt.id, now)
	if err != nil {
		return fmt.Errorf("record create request: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil // cancelled meanwhile: the next pass sees it
	}
	if err := b.deps.crash(CrashCreateRequested); err != nil {
		return err
	}
	b.deps.Metrics.request(opCreate)
	created, err := b.client.CreateBatch(ctx, batchapi.CreateParams{InputFileID: bt.inputFileID, Metadata: map[string]string{
		MetaBatch: strconv.FormatInt(bt.id, 10), MetaGeneration: strconv.Itoa(bt.generation)}})
	if refused(err) {
		return b.reupload(ctx, bt, err)
	}
	if err != nil {
		return err
	}
	if err := b.deps.crash(CrashCreated); err != nil {
		return err
	}
	return b.recordCreated(ctx, bt, created)
}

// refused reports whether the provider answered a create with a client
// error other than 429: it created nothing, and asking again for the same
// file will not change its mind (its input file expired or was deleted).
func refused(err error) bool {
	var api *batchapi.APIError
	return errors.As(err, &api) && api.Status.StatusCode >= 400 && api.Status.StatusCode < 500 &&
		api.Status.StatusCode != http.StatusTooManyRequests
}

// reupload sends a batch whose create was refused back to sealed, to be
// built and uploaded again on the next pass, and deletes its refused
// file at the provider. A file that could not be deleted leaves the
// ledger's trace of an upload it is unsure of: the poller deletes it.
func (b *Builder) reupload(ctx context.Context, bt *batch, cause error) error {
	b.deps.Metrics.request(opDelete)
	derr := b.client.DeleteFile(ctx, bt.inputFileID)
	if errors.Is(derr, batchapi.ErrNotFound) {
		derr = nil
	}
	now := b.deps.Now()
	if _, err := b.pool.Exec(ctx, `
		UPDATE bulk_batches SET state = 'sealed', input_file_id = NULL, create_requested_at = NULL, last_error = $2, updated_at = $3,
		       upload_requested_at = CASE WHEN $4 THEN coalesce(upload_requested_at, $3) END
		WHERE batch_id = $1 AND state = 'uploaded'`, bt.id, cause.Error(), now, derr != nil); err != nil {
		return fmt.Errorf("send back to sealed: %w", err)
	}
	ev := b.deps.Log.Warn().Int64("batch", bt.id).Err(cause)
	if derr != nil {
		ev = ev.AnErr("delete_error", derr)
	}
	ev.Msg("bulk batch refused at create: its file deleted, uploading it again")
	return nil
}

// find looks for a provider batch an earlier attempt created for bt: one
// over bt's input file whose metadata names bt. The provider lists
// batches newest first; the search stops at those created well before
// the ledger asked.
func (b *Builder) find(ctx context.Context, bt *batch) (*batchapi.Batch, error) {
	oldest := bt.createRequestedAt.Add(-findWindow).Unix()
	want := strconv.FormatInt(bt.id, 10)
	after := ""
	for {
		b.deps.Metrics.request(opList)
		page, err := b.client.ListBatches(ctx, batchapi.ListParams{Limit: 100, After: after})
		if err != nil {
			return nil, err
		}
		for i := range page.Data {
			pb := &page.Data[i]
			if pb.InputFileID == bt.inputFileID && pb.Metadata[MetaBatch] == want {
				b.deps.Log.Info().Int64("batch", bt.id).Str("provider_batch", pb.ID).Msg("bulk batch found at the provider")
				return pb, nil
			}
			if pb.CreatedAt < oldest {
				return nil, nil
			}
		}
		if !page.HasMore || page.LastID == "" {
			return nil, nil
		}
		after = page.LastID
	}
}

func (b *Builder) recordCreated(ctx context.Context, bt *batch, pb *batchapi.Batch) error {
	now := b.deps.Now()
	if _, err := b.pool.Exec(ctx, `
		UPDATE bulk_batches SET state = 'created', provider_batch_id = $2, created_at = $3, updated_at = $3, last_error = NULL
		WHERE batch_id = $1 AND state = 'uploaded'`, bt.id, pb.ID, now); err != nil {
		return fmt.Errorf("record created batch %s: %w", pb.ID, err)
	}
	b.deps.Log.Info().Int64("batch", bt.id).Str("provider_batch", pb.ID).Msg("bulk batch created")
	return nil
}

// cancelUnsent ends a batch whose cancel was asked before the provider
// had it: the poller hands its members back.
func (b *Builder) cancelUnsent(ctx context.Context, bt *batch) error {
	now := b.deps.Now()
	_, err := b.pool.Exec(ctx, `
		UPDATE bulk_batches SET state = 'cancelled', finished_at = $2, updated_at = $2
		WHERE batch_id = $1 AND state IN ('sealed', 'uploaded')`, bt.id, now)
	if err != nil {
		return fmt.Errorf("cancel unsent batch: %w", err)
	}
	return nil
}

// every runs fn at once and then every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
