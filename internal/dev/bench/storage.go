package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// TableSize is one table's size on disk once a run settled.
type TableSize struct {
	// Table is the table's name.
	Table string `json:"table"`
	// TableBytes is pg_table_size: the heap, its TOAST table and the free
	// space and visibility maps.
	TableBytes int64 `json:"table_bytes"`
	// IndexBytes is pg_indexes_size: every index on the table.
	IndexBytes int64 `json:"index_bytes"`
}

// storageTables are the tables a settled run's chunks live in: one row
// each in chunk_embeddings and ingest_manifest, and one per document.
var storageTables = []string{"chunk_embeddings", "ingest_manifest", "documents"}

// tableSizes reads the sizes of storageTables, in that order.
func tableSizes(ctx context.Context, db *database) ([]TableSize, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT t.name, pg_table_size(t.name::regclass), pg_indexes_size(t.name::regclass)
		FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n) ORDER BY t.n`, storageTables)
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	sizes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TableSize])
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	return sizes, nil
}

// vacuumRun vacuums and analyzes a settled run's database and returns how
// long that took. A run leaves dead row versions (each manifest row is
// written three times) and unanalyzed rows behind, which autovacuum
// clears at its own pace: it looks at a database once a minute, so a run
// of a minute or less leaves all of that work for after its clock stops,
// while a run of ten minutes pays most of its own as it goes. Paying the
// rest on the clock makes runs of different lengths comparable. VACUUM
// here runs unthrottled, as a manual one does.
func vacuumRun(ctx context.Context, db *database) (float64, error) {
	start := time.Now()
	if _, err := db.pool.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return 0, fmt.Errorf("vacuum the run's database: %w", err)
	}
	return time.Since(start).Seconds(), nil
}

// storageMedian is the median size of each table over reps, in the order
// the first repetition lists them.
func storageMedian(reps []RepResult) []TableSize {
	if len(reps) == 0 {
		return nil
	}
	bytesOf := func(f func(TableSize) int64) map[string]float64 {
		return medianByKey(reps, func(r RepResult) map[string]float64 {
			m := map[string]float64{}
			for _, t := range r.Storage {
				m[t.Table] = float64(f(t))
			}
			return m
		})
	}
	table := bytesOf(func(t TableSize) int64 { return t.TableBytes })
	index := bytesOf(func(t TableSize) int64 { return t.IndexBytes })
	out := make([]TableSize, len(reps[0].Storage))
	for i, t := range reps[0].Storage {
		out[i] = TableSize{Table: t.Table, TableBytes: int64(table[t.Table]), IndexBytes: int64(index[t.Table])}
	}
	return out
}

// writeStorage prints the storage per chunk of the runs that recorded it:
// each table's median size over the repetitions, divided by the chunks.
func writeStorage(b *strings.Builder, r *Report) {
	header := false
	for _, run := range r.Runs {
		sizes := storageMedian(run.Reps)
		if len(sizes) == 0 || run.Chunks == 0 {
			continue
		}
		if !header {
			b.WriteString("\n## PostgreSQL storage per chunk (once the run settled)\n\n")
			b.WriteString("| run | table | table + TOAST B/chunk | indexes B/chunk | total B/chunk | total MiB |\n")
			b.WriteString("| --- | --- | ---: | ---: | ---: | ---: |\n")
			header = true
		}
		per := func(v int64) string { return num(float64(v) / float64(run.Chunks)) }
		row := func(t TableSize) {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.0f |\n", run.Scenario, t.Table, per(t.TableBytes), per(t.IndexBytes),
				per(t.TableBytes+t.IndexBytes), float64(t.TableBytes+t.IndexBytes)/(1<<20))
		}
		total := TableSize{Table: "all " + fmt.Sprint(len(sizes))}
		for _, t := range sizes {
			row(t)
			total.TableBytes, total.IndexBytes = total.TableBytes+t.TableBytes, total.IndexBytes+t.IndexBytes
		}
		row(total)
	}
}
