package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// DefaultMaxDeleteFraction is the largest share of a source's documents
// a sync may delete unless told otherwise: a sync that would delete more
// is refused, as rsync's --max-delete refuses, since an input mounted
// empty or cut short looks exactly like a source whose documents were
// deleted.
const DefaultMaxDeleteFraction = 0.5

// ErrTooManyDeletes is a sync refused by its guard.
var ErrTooManyDeletes = errors.New("sync refused")

// deleteBatch is how many documents one delete transaction takes.
const deleteBatch = 200

// syncReason is the audit's reason for a sync's deletes and a
// tombstone's.
const (
	syncReason      = "not in the source's input: deleted by a sync"
	tombstoneReason = "deleted at the source: a tombstone in the input"
)

// by names the run as the requester of its deletes.
func (p *Producer) by() string { return "producer:" + p.cfg.RunID }

// deleteTombstones deletes the documents of the tombstones the input
// named (native ids), the ones this source has; unknown ids are counted.
func (p *Producer) deleteTombstones(ctx context.Context, natives []string, sum *Summary) error {
	if len(natives) == 0 {
		return nil
	}
	ids := make([]string, len(natives))
	for i, n := range natives {
		ids[i] = messages.DocID(p.cfg.SourceID, n)
	}
	known, err := manifest.ReadDocuments(ctx, p.pool, ids)
	if err != nil {
		return err
	}
	var present []string
	for _, id := range ids {
		if _, ok := known[id]; ok {
			present = append(present, id)
		} else {
			sum.TombstonesUnknown++
		}
	}
	return p.deleteDocs(ctx, present, tombstoneReason, sum)
}

// deleteDocs deletes ids, in transactions of deleteBatch, as the run.
func (p *Producer) deleteDocs(ctx context.Context, ids []string, reason string, sum *Summary) error {
	for len(ids) > 0 {
		n := min(len(ids), deleteBatch)
		res, err := p.eraser.Delete(ctx, erase.Request{SourceID: p.cfg.SourceID, DocIDs: ids[:n], By: p.by(), Reason: reason,
			RunID: p.cfg.RunID, Execute: true})
		if err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		sum.Deleted += len(res.Deleted)
		p.report(*sum)
		if p.Crash != nil {
			p.Crash("after-delete-batch")
		}
		ids = ids[n:]
	}
	return nil
}

// sync deletes the source's documents this run did not read, once the
// run read its whole input without error; a run that would delete more
// than MaxDeleteFraction of the source is refused with ErrTooManyDeletes.
// A file that failed to read is parked under its own name, which the run
// saw, so it is not deleted and does not stop the sync; a JSONL line or a
// record that failed may be a document whose id could not be read, so
// one stops it.
func (p *Producer) sync(ctx context.Context, sum *Summary) error {
	if sum.unnamed > 0 {
		sum.SyncSkipped = fmt.Sprintf("%d records could not be read, so their documents cannot be told apart from deleted ones", sum.unnamed)
		p.log.Warn().Int("unreadable", sum.unnamed).Msg("sync deletes nothing: part of the input could not be read, so a document missing from it may still exist")
		return nil
	}
	unseen, live, err := manifest.CountUnseen(ctx, p.pool, p.cfg.SourceID, p.cfg.RunID)
	if err != nil || unseen == 0 {
		return err
	}
	if float64(unseen) > p.cfg.MaxDeleteFraction*float64(live) {
		return fmt.Errorf("%w: it would delete %d of the %d documents of source %s, more than --max-delete-fraction %s allows; check that the input is complete, or force it with --max-delete-fraction 1",
			ErrTooManyDeletes, unseen, live, p.cfg.SourceID, strconv.FormatFloat(p.cfg.MaxDeleteFraction, 'g', -1, 64))
	}
	after := ""
	for {
		ids, err := manifest.Unseen(ctx, p.pool, p.cfg.SourceID, p.cfg.RunID, after, deleteBatch)
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := p.deleteDocs(ctx, ids, syncReason, sum); err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
}
