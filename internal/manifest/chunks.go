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
