package producer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// fileToKeep is a whole file the plan parks, whose bytes are kept for a
// replay when they can be.
type fileToKeep struct {
	// path opens the file (Producer.OpenFile); sha256 is what the walk
	// read, "" when it did not read it to its end; recognised is what
	// OCR read of a scan parked below its bar.
	path, sha256, recognised string
}

// park adds dl, the dead letter of unreadable document d, to the plan,
// with d's bytes to keep when d is a whole file.
func (pl *plan) park(dl messages.DeadLetter, d corpus.Document) {
	pl.parked = append(pl.parked, dl)
	if d.File == "" {
		return
	}
	if pl.keep == nil {
		pl.keep = map[string]fileToKeep{}
	}
	pl.keep[dl.DocID] = fileToKeep{path: d.File, sha256: d.SHA256, recognised: d.Recognised}
}

// keepFiles keeps, in tx, the bytes of the parked files of the plan
// (deadletter.KeepFile), with the text OCR recognised in a scan, and
// records in each one's dead letter whether
// they were kept, and if not why. One file is held in memory at a time.
func (p *Producer) keepFiles(ctx context.Context, tx pgx.Tx, pl *plan) error {
	for i, dl := range pl.parked {
		k, ok := pl.keep[dl.DocID]
		if !ok {
			continue
		}
		pf, err := messages.DecodeParkedFile(dl.Payload)
		if err != nil {
			continue
		}
		data, sum, reason := p.readToKeep(k)
		pf.Kept, pf.NotKeptReason = messages.NotKeptFile, reason
		if reason == "" {
			if err := deadletter.KeepFile(ctx, tx, deadletter.FileRef{DeadLetterID: dl.DeadLetterID, DocID: dl.DocID, SHA256: sum, Recognised: k.recognised}, data); err != nil {
				return err
			}
			pf.Kept, pf.SHA256 = messages.KeptFile, sum
		}
		payload, err := pf.Encode()
		if err != nil {
			return fmt.Errorf("park %s: %w", dl.SourceNativeID, err)
		}
		pl.parked[i].Payload = payload
	}
	return nil
}

// readToKeep reads the bytes of a parked file to keep them, and returns
// them with their hex SHA-256, or why they are not kept.
func (p *Producer) readToKeep(k fileToKeep) (data []byte, sum, reason string) {
	if k.path == corpus.Stdin {
		return nil, "", "read from stdin, which cannot be read again"
	}
	limit := p.cfg.MaxKeptFileBytes
	f, err := p.OpenFile(k.path)
	if err != nil {
		return nil, "", "could not read it again: " + err.Error()
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, "", "could not read it again: " + err.Error()
	case int64(len(data)) > limit:
		return nil, "", fmt.Sprintf("over the %d-byte cap on kept bytes (--max-kept-file-bytes)", limit)
	}
	h := sha256.Sum256(data)
	sum = hex.EncodeToString(h[:])
	if k.sha256 != "" && sum != k.sha256 {
		return nil, "", "the file changed after it was read"
	}
	return data, sum, ""
}

// openFile is the default Producer.OpenFile.
func openFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is gone", path)
	}
	return f, err
}
