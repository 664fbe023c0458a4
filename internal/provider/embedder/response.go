package embedder

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
)

// responseDecoder reads a 2xx embeddings reply. It is a small purpose-built
// scanner rather than encoding/json because the reply is the bulk of the
// client's work: it decodes straight from the body into a reusable arena
// without per-vector allocations, and it tolerates the bare NaN/Infinity
// literals some Python servers emit, so that a corrupt vector is blamed on
// its input instead of failing the whole batch as unparsable.
//
// A decoder is reused through decoderPool; it is not safe for concurrent use.
type responseDecoder struct {
	body  []byte    // the raw reply
	arena []float32 // every vector of the reply, back to back
	raw   []byte    // base64 scratch
	items []item    // one per element of "data", in reply order
	pos   []int     // input index -> item, while placing
	s     scanner
}

// item is one element of the reply's "data" array.
type item struct {
	index     int // -1 when absent
	off, n    int // the vector is arena[off : off+n]
	nonFinite bool
}

var decoderPool = sync.Pool{New: func() any { return new(responseDecoder) }}

// maxPooledResponse keeps one huge reply from pinning memory in the pool.
const maxPooledResponse = 32 << 20

func getDecoder() *responseDecoder { return decoderPool.Get().(*responseDecoder) }

func putDecoder(d *responseDecoder) {
	if cap(d.body) > maxPooledResponse || cap(d.arena)*4 > maxPooledResponse {
		return
	}
	decoderPool.Put(d)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedResponse}, args...)...)
}

// parse scans d.body into d.items and d.arena.
func (d *responseDecoder) parse() error {
	d.arena, d.items = d.arena[:0], d.items[:0]
	d.s = scanner{b: d.body}
	sawData := false
	err := d.s.object(func(key []byte) error {
		if string(key) != "data" {
			return d.s.skip()
		}
		sawData = true
		return d.s.array(d.parseItem)
	})
	if err != nil {
		return err
	}
	if d.s.peek() != 0 {
		return malformed("trailing data at offset %d", d.s.i)
	}
	if !sawData {
		return malformed(`no "data" array`)
	}
	return nil
}

func (d *responseDecoder) parseItem() error {
	it := item{index: -1, off: len(d.arena)}
	sawEmbedding := false
	err := d.s.object(func(key []byte) error {
		switch string(key) {
		case "index":
			tok := d.s.token()
			i, err := strconv.Atoi(string(tok))
			if err != nil {
				return malformed("data[%d] has index %q", len(d.items), tok)
			}
			it.index = i
			return nil
		case "embedding":
			if sawEmbedding {
				return malformed("data[%d] has two embeddings", len(d.items))
			}
			sawEmbedding = true
			return d.parseEmbedding(&it)
		}
		return d.s.skip()
	})
	if err != nil {
		return err
	}
	if !sawEmbedding {
		return malformed("data[%d] has no embedding", len(d.items))
	}
	it.n = len(d.arena) - it.off
	d.items = append(d.items, it)
	return nil
}

// parseEmbedding accepts either encoding whatever was asked for: some
// OpenAI-compatible servers ignore encoding_format.
func (d *responseDecoder) parseEmbedding(it *item) error {
	switch d.s.peek() {
	case '"':
		lit, content, escaped, err := d.s.str()
		if err != nil {
			return err
		}
		if escaped {
			if content, err = unescape(lit); err != nil {
				return err
			}
		}
		return d.appendBase64(content, it)
	case '[':
		return d.appendFloats(it)
	}
	return malformed("embedding at offset %d is neither a string nor an array", d.s.i)
}

// place validates the items against the request and returns the
// vectors in input order. dims is the expected dimension (0: take the first
// vector's). Problems with one input come back as *InputError for the lowest
// such input.
func (d *responseDecoder) place(n, dims int) ([][]float32, int, error) {
	if len(d.items) != n {
		return nil, dims, malformed("%d embeddings for %d inputs", len(d.items), n)
	}
	if cap(d.pos) < n {
		d.pos = make([]int, n)
	}
	d.pos = d.pos[:n]
	for i := range d.pos {
		d.pos[i] = -1
	}
	for j, it := range d.items {
		if it.index < 0 || it.index >= n {
			return nil, dims, malformed("data[%d] has index %d, want 0..%d", j, it.index, n-1)
		}
		if d.pos[it.index] >= 0 {
			return nil, dims, malformed("index %d appears twice", it.index)
		}
		d.pos[it.index] = j
	}
	if dims == 0 {
		dims = d.items[d.pos[0]].n
	}
	for i, j := range d.pos {
		it := d.items[j]
		switch {
		case it.n != dims:
			return nil, dims, &InputError{Index: i, Err: dimensionMismatch(it.n, dims)}
		case it.nonFinite:
			return nil, dims, &InputError{Index: i, Err: invalidVector()}
		}
	}
	backing := make([]float32, n*dims)
	out := make([][]float32, n)
	for i, j := range d.pos {
		it := d.items[j]
		v := backing[i*dims : (i+1)*dims : (i+1)*dims]
		copy(v, d.arena[it.off:it.off+it.n])
		out[i] = v
	}
	return out, dims, nil
}

// appendBase64 decodes a base64 string of little-endian float32s onto the
// arena.
func (d *responseDecoder) appendBase64(enc []byte, it *item) error {
	need := base64.StdEncoding.DecodedLen(len(enc))
	if cap(d.raw) < need {
		d.raw = make([]byte, need)
	}
	m, err := base64.StdEncoding.Decode(d.raw[:need], enc)
	if err != nil {
		return malformed("embedding is not base64: %v", err)
	}
	if m%4 != 0 {
		return malformed("base64 embedding of %d bytes is not a whole number of float32s", m)
	}
	off := len(d.arena)
	d.arena = slices.Grow(d.arena, m/4)[:off+m/4]
	dst := d.arena[off:]
	for k := range dst {
		x := math.Float32frombits(binary.LittleEndian.Uint32(d.raw[4*k:]))
		if !finite(x) {
			it.nonFinite = true
		}
		dst[k] = x
	}
	return nil
}

// appendFloats parses a JSON array of numbers onto the arena.
func (d *responseDecoder) appendFloats(it *item) error {
	return d.s.array(func() error {
		tok := d.s.token()
		if len(tok) == 0 {
			return malformed("embedding holds a non-number at offset %d", d.s.i)
		}
		f, err := strconv.ParseFloat(string(tok), 32)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return malformed("embedding holds %q", tok)
		}
		x := float32(f)
		if !finite(x) {
			it.nonFinite = true
		}
		d.arena = append(d.arena, x)
		return nil
	})
}

func finite(x float32) bool {
	return x == x && x <= math.MaxFloat32 && x >= -math.MaxFloat32
}

// unescape decodes a JSON string literal that contains escapes; providers
// rarely escape base64 (some encoders write \/), so this path may allocate.
func unescape(lit []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return nil, malformed("bad string: %v", err)
	}
	return []byte(s), nil
}
