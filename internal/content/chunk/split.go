package chunk

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// Chunk is one piece of a text.
type Chunk struct {
	// Index is the chunk's position, from 0, among the chunks of its text.
	Index int
	// Text is the chunk's content: exactly text[Start:End], sharing the
	// text's memory.
	Text string
	// Start and End are byte offsets in the text given to Split.
	Start, End int
}

// maxBackoff bounds how far a hard cut moves back to keep a combining
// sequence whole, so that pathological input (thousands of combining
// marks) cannot make splitting quadratic.
const maxBackoff = 32

// Split cuts text into chunks as described in the package documentation.
// Text with nothing but whitespace yields no chunks. Text should be valid
// UTF-8; an invalid byte is treated as a one-byte rune and kept.
//
// Split scans each chunk's window once, so for ordinary text its time is
// about len(text)·Size/(Size−Overlap), and never more than len(text)·Size.
// Besides the returned slice it allocates only the text's list of
// paragraph breaks: chunk texts share text's memory.
// It panics if cfg.Validate reports an error: validate configuration when
// it is loaded.
func Split(text string, cfg Config) []Chunk {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	s := newSplitter(text, cfg)
	var chunks []Chunk
	start, prevEnd := 0, 0
	for {
		start = skipSpace(text, start)
		if start >= len(text) {
			return chunks
		}
		cut, final := s.window(start)
		if s.tokenizer != nil {
			cut, final = s.fit(start, cut, final)
		}
		end := trimSpaceEnd(text, start, cut)
		// A chunk that adds nothing past the previous one's end would be pure
		// overlap: a duplicate vector for no new text.
		if end > prevEnd {
			if chunks == nil {
				chunks = make([]Chunk, 0, s.estimate())
			}
			chunks = append(chunks, Chunk{Index: len(chunks), Text: text[start:end], Start: start, End: end})
			prevEnd = end
		}
		if final {
			return chunks
		}
		start = s.overlapStart(start, cut)
	}
}

// splitter holds what one Split needs; all sizes are in scaled units
// (runes, quarter tokens of the estimate, or the tokenizer's tokens).
type splitter struct {
	text     string
	quarters bool
	// tokenizer, when set, is the model's: ends[i] is how many of the
	// text's tokens end at byte i, which makes a rune's cost the tokens
	// that end inside it.
	tokenizer *tokens.Tokenizer
	ends      []uint8
	size      int
	capacity  int
	overlap   int
	// minUsed is how full a chunk must be before a boundary may end it: half
	// the capacity, so that a paragraph break near the start does not yield
	// a sliver, and more than the overlap, so that the next chunk always
	// starts later than this one.
	minUsed int
	// peaks are the byte offsets, in order, of the paragraph breaks that
	// outrank every other break within a chunk's advance either side
	// (findPeaks). A chunk ends at the first peak past minUsed.
	peaks []int
	// inReach are the paragraph breaks past minUsed in the current window.
	inReach []paragraphBreak
}

// paragraphBreak is a paragraph break at byte at, ranked by anchorRank.
type paragraphBreak struct {
	at   int
	rank uint64
}

// bytesPerToken is about how many bytes of text a token covers: peaks are
// found in bytes, before any window measures the text in units.
const bytesPerToken = 4

// findPeaks returns the offsets of the paragraph breaks of text whose rank
// is above that of every other break less than reach bytes away, in
// either direction. Whether a break is a peak depends only on the text
// within reach of it, never on where a chunk began: after an edit, the
// peaks farther than reach from it are the same breaks as before. Two
// peaks are always at least reach apart. It runs in time linear in the
// text, with a window maximum kept in a deque each way.
func findPeaks(text string, reach int) []int {
	var breaks []paragraphBreak
	for i := 0; ; {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		at := i + j
		k := strings.IndexByte(text[at+1:], '\n')
		if k < 0 {
			break
		}
		next := at + 1 + k
		if strings.TrimSpace(text[at+1:next]) == "" {
			breaks = append(breaks, paragraphBreak{at, anchorRank(text, at)})
		}
		i = next
	}
	if len(breaks) == 0 {
		return nil
	}
	// outranks[i] says whether breaks[i] outranks every break within reach
	// before it; the second pass checks those after it. A tie goes to the
	// earlier break.
	outranks := make([]bool, len(breaks))
	var w windowMax
	for i, b := range breaks {
		w.expire(func(j int) bool { return b.at-breaks[j].at >= reach })
		top, ok := w.top()
		outranks[i] = !ok || breaks[top].rank < b.rank
		w.push(i, func(j int) bool { return breaks[j].rank <= b.rank })
	}
	var peaks []int
	w = windowMax{deque: w.deque[:0]}
	for i := len(breaks) - 1; i >= 0; i-- {
		b := breaks[i]
		w.expire(func(j int) bool { return breaks[j].at-b.at >= reach })
		if top, ok := w.top(); outranks[i] && (!ok || breaks[top].rank <= b.rank) {
			peaks = append(peaks, b.at)
		}
		w.push(i, func(j int) bool { return breaks[j].rank < b.rank })
	}
	slices.Reverse(peaks)
	return peaks
}

// windowMax is the monotonic deque of a sliding window maximum over
// breaks: indexes whose ranks fall from the front, the window's highest.
type windowMax struct {
	deque []int
	head  int
}

// expire drops the indexes at the front that gone reports are out of the
// window.
func (w *windowMax) expire(gone func(int) bool) {
	for w.head < len(w.deque) && gone(w.deque[w.head]) {
		w.head++
	}
}

// top returns the index of the window's highest-ranked break.
func (w *windowMax) top() (int, bool) {
	if w.head == len(w.deque) {
		return 0, false
	}
	return w.deque[w.head], true
}

// push adds index i, first dropping from the back the indexes that
// outranked reports i outranks: they can never be the window's highest
// again.
func (w *windowMax) push(i int, outranked func(int) bool) {
	for len(w.deque) > w.head && outranked(w.deque[len(w.deque)-1]) {
		w.deque = w.deque[:len(w.deque)-1]
	}
	w.deque = append(w.deque, i)
}

func newSplitter(text string, cfg Config) *splitter {
	s := &splitter{text: text, size: cfg.Size}
	scale := 1
	if cfg.Unit == UnitTokens {
		if t, ok := cfg.Tokens.(*tokens.Tokenizer); ok {
			s.tokenizer = t
			s.ends = make([]uint8, len(text))
			t.Ends(text, func(end int) {
				if e := &s.ends[end-1]; *e < 255 {
					*e++
				}
			})
		} else {
			s.quarters, scale = true, quartersPerToken
		}
	}
	s.overlap = cfg.Overlap * scale
	s.setCapacity(cfg.Size * scale)
	// Units of runes and of quarter tokens are each about a byte.
	advance := s.capacity - s.overlap
	if s.tokenizer != nil {
		advance *= bytesPerToken
	}
	s.peaks = findPeaks(text, advance)
	return s
}

func (s *splitter) setCapacity(capacity int) {
	s.capacity = capacity
	s.minUsed = min(s.capacity, max(s.capacity/2, s.overlap+1))
}

// cost is what the rune r, of size bytes at byte i, takes of a chunk.
func (s *splitter) cost(i int, r rune, size int) int {
	switch {
	case s.ends != nil:
		c := 0
		for _, e := range s.ends[i : i+size] {
			c += int(e)
		}
		return c
	case s.quarters:
		return tokens.Quarters(r)
	}
	return 1
}

// fit checks the chunk window found from start with the tokenizer, and
// narrows the window until the chunk holds at most size tokens by the
// model's own count. The window's costs come from tokenizing the whole
// text, and a chunk tokenized alone can cost a token or two more at its
// edges: a word cut from the space before it, say.
func (s *splitter) fit(start, cut int, final bool) (int, bool) {
	capacity := s.capacity
	defer s.setCapacity(capacity)
	for {
		end := trimSpaceEnd(s.text, start, cut)
		n := s.tokenizer.Count(s.text[start:end])
		_, first := utf8.DecodeRuneInString(s.text[start:])
		switch {
		case n <= s.size || end-start <= first:
			return cut, final
		case s.capacity <= 1:
			// One character costs at most MinExactSize tokens.
			return start + first, start+first == len(s.text)
		}
		s.setCapacity(max(1, s.capacity-(n-s.size)))
		cut, final = s.window(start)
	}
}

// estimate guesses the number of chunks, so that the slice is allocated
// once for typical text: a chunk usually ends between minUsed and capacity,
// and a unit is about a byte.
func (s *splitter) estimate() int {
	return len(s.text)/max(1, (s.minUsed+s.capacity)/2-s.overlap) + 1
}

// window scans forward from start, which is not whitespace, as far as a
// chunk can reach, remembering the last boundary of each kind that would
// leave the chunk at least minUsed full. It returns where to cut, or the end
// of the text when the rest fits.
func (s *splitter) window(start int) (cut int, final bool) {
	text := s.text
	b := boundaries{para: -1, line: -1, sentence: -1, space: -1, early: -1}
	used := 0
	prevNL, usedAtPrevNL := -1, 0
	lineBlank := false
	prev := rune(-1)
	s.inReach = s.inReach[:0]
	for i := start; i < len(text); {
		r, size := rune(text[i]), 1
		var space bool
		if r < utf8.RuneSelf {
			space = asciiSpace[r]
		} else {
			r, size = utf8.DecodeRuneInString(text[i:])
			space = unicode.IsSpace(r)
		}
		// Boundaries are positions between runes: cutting at i ends the
		// chunk before r.
		if i > start {
			ends := space && isSentenceEnd(prev) || isFullStop(prev)
			switch {
			case used < s.minUsed:
				if space || ends {
					b.early = i
				}
			case space:
				b.space = i
				if r == '\n' {
					b.line = i
				}
				fallthrough
			default:
				if ends {
					b.sentence = i
				}
			}
		}
		if r == '\n' {
			if lineBlank && prevNL > start && usedAtPrevNL >= s.minUsed {
				if _, peak := slices.BinarySearch(s.peaks, prevNL); peak {
					// The text alone says to cut here.
					return prevNL, false
				}
				rank := anchorRank(text, prevNL)
				if b.para < 0 || rank >= b.paraRank {
					b.para, b.paraRank = prevNL, rank
				}
				s.inReach = append(s.inReach, paragraphBreak{prevNL, rank})
			}
			prevNL, usedAtPrevNL, lineBlank = i, used, true
		} else if !space {
			lineBlank = false
		}
		c := s.cost(i, r, size)
		// The first rune is always taken, so that every chunk moves on.
		if used+c > s.capacity && i > start {
			if cut, ok := s.towardPeak(start, i, used); ok {
				return cut, false
			}
			return s.choose(start, i, b), false
		}
		used += c
		prev = r
		i += size
	}
	return len(text), true
}

// anchorText bounds the text before a paragraph break that ranks it.
const anchorText = 64

// towardPeak chooses the cut of a window that reaches no peak past
// minUsed and ends at limit, where used units are full: the
// highest-ranked paragraph break in reach from which the next chunk
// reaches the next peak, past its own minUsed. The chunks between two
// peaks then lead onto the second, wherever the first chunk after an
// edit began, instead of passing it by. It reports false when no break
// in reach leads there; the window's bytes per unit convert units to
// bytes.
func (s *splitter) towardPeak(start, limit, used int) (int, bool) {
	k, _ := slices.BinarySearch(s.peaks, limit)
	if k == len(s.peaks) || len(s.inReach) == 0 {
		return 0, false
	}
	peak := s.peaks[k]
	perUnit := float64(limit-start) / float64(max(used, 1))
	lo := peak - int(float64(s.capacity-s.overlap)*perUnit)
	hi := peak - int(float64(s.minUsed-s.overlap)*perUnit)
	best, found := paragraphBreak{}, false
	for _, b := range s.inReach {
		if b.at >= lo && b.at <= hi && (!found || b.rank >= best.rank) {
			best, found = b, true
		}
	}
	return best.at, found
}

// anchorRank ranks the paragraph break at i by the text just before it:
// a hash, so that which breaks end chunks is decided by the text around
// the breaks, not by where a window begins. After an edit moves a
// window's start, the peaks are the same breaks as before, and the cuts
// fall back onto the unedited text's within a chunk or two instead of
// shifting every cut after the edit.
func anchorRank(text string, i int) uint64 {
	from := max(0, i-anchorText)
	h := uint64(14695981039346656037)
	for k := from; k < i; k++ {
		h ^= uint64(text[k])
		h *= 1099511628211
	}
	return h
}

// asciiSpace is unicode.IsSpace for ASCII, as a table: the window loop
// asks it of every byte.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// boundaries are the last positions of each kind found in a window, -1
// where there is none. All but early leave the chunk at least minUsed full.
type boundaries struct {
	para, line, sentence, space int
	// paraRank is anchorRank of para: of the paragraph breaks in reach,
	// with no peak among them and none leading to the next, the chunk
	// ends at the one of highest rank, not the last.
	paraRank uint64
	// early is the last whitespace or full stop before the chunk is minUsed
	// full: a short chunk is better than a word cut in two.
	early int
}

// choose picks the cut for a chunk that cannot reach past limit.
func (s *splitter) choose(start, limit int, b boundaries) int {
	switch {
	case b.para > start:
		return b.para
	case b.line > start:
		return b.line
	case b.sentence > start:
		return b.sentence
	case b.space > start:
		return b.space
	case b.early > start:
		return b.early
	}
	return s.hardCut(start, limit)
}

// hardCut cuts between two runes at or before limit, stepping back so as
// not to separate a base character from the marks, joiners and modifiers
// that belong with it, when that can be done within a few runes.
func (s *splitter) hardCut(start, limit int) int {
	cut := limit
	for range maxBackoff {
		if cut <= start {
			break
		}
		next, _ := utf8.DecodeRuneInString(s.text[cut:])
		before, size := utf8.DecodeLastRuneInString(s.text[start:cut])
		if !continuesCluster(next) && before != zeroWidthJoiner {
			return cut
		}
		cut -= size
	}
	return limit
}

// overlapStart returns where the chunk after [start, cut) begins: about
// overlap units before cut, moved forward to the start of a word when the
// repeat would otherwise begin mid-word. It is always after start.
func (s *splitter) overlapStart(start, cut int) int {
	if s.overlap == 0 {
		return cut
	}
	p, used := cut, 0
	for p > start {
		r, size := utf8.DecodeLastRuneInString(s.text[start:p])
		c := s.cost(p-size, r, size)
		if used+c > s.overlap {
			break
		}
		used += c
		p -= size
	}
	if p <= start {
		return cut
	}
	before, _ := utf8.DecodeLastRuneInString(s.text[:p])
	at, _ := utf8.DecodeRuneInString(s.text[p:])
	if !unicode.IsSpace(before) && !unicode.IsSpace(at) {
		if j := strings.IndexFunc(s.text[p:cut], unicode.IsSpace); j >= 0 {
			p += j
		}
	}
	return p
}

func skipSpace(text string, i int) int {
	for i < len(text) {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if !unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// trimSpaceEnd moves end back over whitespace, but not past start, which
// is not whitespace.
func trimSpaceEnd(text string, start, end int) int {
	for end > start {
		r, size := utf8.DecodeLastRuneInString(text[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		end -= size
	}
	return end
}

// isSentenceEnd reports punctuation that ends a sentence when whitespace
// follows it.
func isSentenceEnd(r rune) bool {
	return r == '.' || r == '!' || r == '?' || r == '…'
}

// isFullStop reports punctuation that ends a sentence on its own: scripts
// written without spaces between sentences use these.
func isFullStop(r rune) bool {
	return r == '。' || r == '！' || r == '？' || r == '｡'
}

const zeroWidthJoiner = '\u200D'

// continuesCluster reports runes that attach to the rune before them, so
// a chunk should not start with one.
func continuesCluster(r rune) bool {
	switch {
	case r < 0x300:
		return false
	case r == zeroWidthJoiner,
		r >= 0xFE00 && r <= 0xFE0F,   // variation selectors
		r >= 0x1F3FB && r <= 0x1F3FF, // emoji skin tones
		r >= 0xE0020 && r <= 0xE007F, // emoji tag sequences
		r >= 0xE0100 && r <= 0xE01EF: // variation selectors supplement
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me)
}
