package vectorstore

import (
	"encoding/json"
	"sync"
)

// batch holds one Upsert's parameters as parallel columns. Batches are
// pooled because the flat vector buffer is the largest allocation on the
// consumer's hot path (batch size × dims float32s per call).
type batch struct {
	docIDs      []string
	chunkIndex  []int32
	versions    []int64
	hashes      []string
	models      []string
	texts       []string
	metadata    []json.RawMessage
	flat        []float32
	seen        map[chunkKey]int
	unresolved  []int
	resolveIDs  []string
	resolveIdxs []int32
}

type chunkKey struct {
	docID string
	index int
}

// maxPooledFloats bounds what the pool keeps, so that one huge batch does
// not pin its buffer for the life of the process.
const maxPooledFloats = 4 << 20

var batchPool = sync.Pool{New: func() any { return &batch{seen: map[chunkKey]int{}} }}

// emptyObject is stored for records without metadata; the column is NOT NULL.
var emptyObject = json.RawMessage(`{}`)

func getBatch() *batch { return batchPool.Get().(*batch) }

// release drops every reference to the caller's strings and byte slices
// before pooling, so that a pooled batch never keeps chunk text alive.
func (b *batch) release() {
	clear(b.docIDs)
	clear(b.hashes)
	clear(b.models)
	clear(b.texts)
	clear(b.metadata)
	clear(b.resolveIDs)
	clear(b.seen)
	if cap(b.flat) > maxPooledFloats {
		return
	}
	batchPool.Put(b)
}

// fill loads recs into the batch columns. It assumes recs were validated.
func (b *batch) fill(recs []Record, dims int) {
	n := len(recs)
	b.docIDs = resize(b.docIDs, n)
	b.chunkIndex = resize(b.chunkIndex, n)
	b.versions = resize(b.versions, n)
	b.hashes = resize(b.hashes, n)
	b.models = resize(b.models, n)
	b.texts = resize(b.texts, n)
	b.metadata = resize(b.metadata, n)
	b.flat = resize(b.flat, n*dims)
	for i := range recs {
		r := &recs[i]
		b.docIDs[i] = r.DocID
		b.chunkIndex[i] = int32(r.ChunkIndex)
		b.versions[i] = r.Version
		b.hashes[i] = r.ContentHash
		b.models[i] = r.Model
		b.texts[i] = r.Text
		if r.Metadata == nil {
			b.metadata[i] = emptyObject
		} else {
			b.metadata[i] = r.Metadata
		}
		copy(b.flat[i*dims:(i+1)*dims], r.Embedding)
	}
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
