package manifest

// Chunks names manifest rows column by column, the shape the statements
// pass to unnest. Versions may be left empty for statements that key on
// (doc_id, chunk_index) alone.
type Chunks struct {
	DocIDs   []string
	Indexes  []int32
	Versions []int64
}

// MakeChunks returns Chunks with room for n rows.
func MakeChunks(n int) Chunks {
	return Chunks{DocIDs: make([]string, 0, n), Indexes: make([]int32, 0, n), Versions: make([]int64, 0, n)}
}

// Add appends one row.
func (c *Chunks) Add(docID string, index int, version int64) {
	c.DocIDs = append(c.DocIDs, docID)
	c.Indexes = append(c.Indexes, int32(index))
	c.Versions = append(c.Versions, version)
}

// Len is the number of rows.
func (c Chunks) Len() int { return len(c.DocIDs) }

// lockedInKeyOrder begins a statement on the manifest rows that rows (an
// unnest naming at least doc_id and chunk_index, as t) names and that
// match where: the CTE t, then locked, those rows locked in key order.
// Every statement that updates several manifest rows takes its locks
// this way, in one order, so that no two of them can each hold a row the
// other waits for: a producer confirms a window in publish order while a
// consumer stores some of the same chunks, and a batch in stream order
// is in neither's. The update then reads fromLocked.
func lockedInKeyOrder(rows, where string) string {
	return `
		WITH t AS (SELECT * FROM ` + rows + `),
		locked AS (
			SELECT m.doc_id, m.chunk_index FROM ingest_manifest m JOIN t USING (doc_id, chunk_index)
			WHERE ` + where + `
			ORDER BY m.doc_id, m.chunk_index
			FOR UPDATE OF m)`
}

// fromLocked ends an update begun with lockedInKeyOrder: it updates the
// locked rows, with t's values. A row locked by this statement no longer
// changes under it, so where need not be repeated.
const fromLocked = `
		FROM t JOIN locked USING (doc_id, chunk_index)
		WHERE m.doc_id = t.doc_id AND m.chunk_index = t.chunk_index`
