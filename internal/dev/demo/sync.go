package demo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/erase"
)

// SyncDeletes is how many documents the demo removes from its corpus
// before its sync run, which must delete them.
const SyncDeletes = 3

// synced is what the demo's sync run deleted, and what is left of it.
type synced struct {
	Deleted int
	Left    erase.Left
	Leaks   int
}

// syncDeletes removes SyncDeletes of the generated documents from
// corpusDir, as a source deletes them, runs the producer over the
// directory with --sync, and reads back from PostgreSQL what is left of
// the documents it deleted.
func (s *stack) syncDeletes(ctx context.Context, pool *pgxpool.Pool, corpusDir string) (synced, error) {
	var files []string
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "poison" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return synced{}, err
	}
	if len(files) < 2*SyncDeletes {
		return synced{}, fmt.Errorf("the corpus has %d generated documents, too few to delete %d of", len(files), SyncDeletes)
	}
	sort.Strings(files)
	for _, f := range files[:SyncDeletes] {
		if err := os.Remove(f); err != nil {
			return synced{}, err
		}
	}
	s.say("removed %d documents at the source; a sync run deletes them …", SyncDeletes)
	env, err := s.env("producer", "")
	if err != nil {
		return synced{}, err
	}
	prod, err := s.startProc("producer", "producer-sync", env, "--source", corpusSource, "--sync", "--json", corpusDir)
	if err != nil {
		return synced{}, err
	}
	if err := waitOneShot(prod); err != nil {
		return synced{}, fmt.Errorf("sync run: %w", err)
	}
	deleted, err := erase.List(ctx, pool, corpusSource, true, 10*SyncDeletes)
	if err != nil {
		return synced{}, err
	}
	out := synced{Deleted: len(deleted)}
	for _, d := range deleted {
		doc, err := erase.Show(ctx, pool, d.DocID)
		if err != nil {
			return synced{}, err
		}
		out.Left.Vectors += doc.Left.Vectors
		out.Left.TextRows += doc.Left.TextRows
		out.Left.Payloads += doc.Left.Payloads
	}
	leaks, err := erase.Check(ctx, pool)
	if err != nil {
		return synced{}, err
	}
	out.Leaks = len(leaks)
	return out, nil
}
