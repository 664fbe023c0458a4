package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// ErrSourceChanged is a re-derivation whose source no longer holds the
// document version the dead letter is of, or no longer splits into the
// chunks that version was recorded with.
var ErrSourceChanged = errors.New("source changed")

// Rederivation takes a dead letter's chunk again from its source: the
// document is read from From as the producer reads it, checked against
// the version the dead letter is of, and split as the producer splits
// it. PostgreSQL records a document's native id but not where its source
// was read from, so From names it.
type Rederivation struct {
	// From is the directory or file the source was ingested from, as
	// given to the producer; required.
	From string
	// JSONL reads From as JSONL whatever its extension, as the producer's
	// --jsonl does. Defaults to false: by extension.
	JSONL bool
	// Chunk is how the producer split the source. Defaults to
	// chunk.DefaultConfig(), the producer's default.
	Chunk chunk.Config
}

// errFound stops a corpus walk at the document sought.
var errFound = errors.New("found")

// Apply sets c's text and metadata to those of its dead letter's chunk
// as re-derived from the source, and c's origin to the source. It
// returns ErrNoDeadLetter for an unknown dead letter, ErrStale when the
// document was ingested again since, and ErrSourceChanged when the
// source's document does not hash to the version recorded (say so, and
// take nothing) or does not split into that version's chunk count.
func (r Rederivation) Apply(ctx context.Context, pool *pgxpool.Pool, c *Correction) error {
	if r.From == "" {
		return fmt.Errorf("%w: name the directory or JSONL file the source was ingested from", ErrCorrection)
	}
	if r.Chunk == (chunk.Config{}) {
		r.Chunk = chunk.DefaultConfig()
	}
	if err := r.Chunk.Validate(); err != nil {
		return fmt.Errorf("%w: chunking: %v", ErrCorrection, err)
	}
	dl, err := deadletter.ReadRederivable(ctx, pool, c.DeadLetterID)
	if errors.Is(err, deadletter.ErrNotFound) {
		return fmt.Errorf("%w: %s (see sluice dlq ls)", ErrNoDeadLetter, c.DeadLetterID)
	}
	if err != nil {
		return err
	}
	native, index, version, recordedHash, chunkCount := dl.NativeID, dl.ChunkIndex, dl.Version, dl.ContentHash, dl.ChunkCount
	if dl.DocVersion == nil || *dl.DocVersion != version {
		return fmt.Errorf("%w: %s is of version %d of %q, which is no longer the document's current version", ErrStale, c.DeadLetterID, version, native)
	}
	doc, err := r.find(ctx, native)
	if err != nil {
		return err
	}
	meta, hash, rejected := corpus.Admit(doc)
	if doc.Status != corpus.StatusOK || rejected != nil {
		return fmt.Errorf("%w: %q in %s is no longer readable as it was (status %s)", ErrSourceChanged, native, r.From, doc.Status)
	}
	if hash != recordedHash {
		return fmt.Errorf("%w: %q in %s hashes to %s, but version %d was recorded as %s: the source changed since; ingest it again (a new version) or correct the text with --text",
			ErrSourceChanged, native, r.From, hash, version, recordedHash)
	}
	chunks := chunk.Split(doc.Text, r.Chunk)
	if len(chunks) != chunkCount || index >= len(chunks) {
		return fmt.Errorf("%w: %q splits into %d chunks with these chunk settings, but version %d has %d: give the producer's --chunk-size, --chunk-overlap and --chunk-unit",
			ErrSourceChanged, native, len(chunks), version, chunkCount)
	}
	text := chunks[index].Text
	if meta, err = doc.ChunkMetadata(meta, chunks[index].Start, chunks[index].End); err != nil {
		return fmt.Errorf("%w: %q: metadata: %v", ErrSourceChanged, native, err)
	}
	metadata := json.RawMessage("{}")
	if len(meta) > 0 {
		metadata = meta
	}
	c.Text, c.Metadata, c.Origin = &text, &metadata, "rederived from "+r.From
	return nil
}

// find reads the document with native id native from r.From.
func (r Rederivation) find(ctx context.Context, native string) (corpus.Document, error) {
	reader, err := corpus.NewReader(corpus.Config{Inputs: []string{r.From}, JSONL: r.JSONL, Extractor: corpus.LimitedExtractor{}})
	if err != nil {
		return corpus.Document{}, fmt.Errorf("%w: --from: %v", ErrCorrection, err)
	}
	var found corpus.Document
	err = reader.Walk(ctx, func(d corpus.Document) error {
		if messages.StorableNativeID(d.NativeID) == native {
			found = d
			return errFound
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		return found, nil
	case err != nil:
		return corpus.Document{}, fmt.Errorf("read %s: %w", r.From, err)
	}
	return corpus.Document{}, fmt.Errorf("%w: no document %q in %s: name the directory or JSONL file the source was ingested from", ErrSourceChanged, native, r.From)
}
