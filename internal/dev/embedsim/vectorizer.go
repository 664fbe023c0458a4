package embedsim

import (
	"math"
	"unicode"
)

// Feature weights. Whole words dominate so that texts sharing vocabulary are
// close; 3-grams add a little morphology ("embed" ~ "embedding") and keep
// typos close to the original.
const (
	unigramWeight = 1.0
	trigramWeight = 0.5
)

// Token boundary markers for 3-grams, outside any script a token can hold.
const (
	tokenStart = rune(0x02)
	tokenEnd   = rune(0x03)
)

// EmbedInto writes the embedding of text into dst, using len(dst) as the
// dimension. The result is deterministic, L2-normalised, and depends only on
// text and len(dst): lowercased word unigrams and character 3-grams (Unicode
// letters and digits form words) are hashed into buckets with a hashed sign.
// A text without any word character still gets a deterministic unit vector.
// EmbedInto does not allocate.
func EmbedInto(dst []float32, text string) {
	if len(dst) == 0 {
		return
	}
	clear(dst)
	dims := uint64(len(dst))
	var (
		features int
		tokHash  uint64 = fnvOffset
		tokLen   int
		w0, w1   rune // the two runes before the current one, in the token
	)
	flush := func() {
		if tokLen == 0 {
			return
		}
		addFeature(dst, dims, mix(tokHash^unigramTag), unigramWeight)
		addFeature(dst, dims, trigramHash(w0, w1, tokenEnd), trigramWeight)
		features += 2
		tokHash, tokLen = fnvOffset, 0
	}
	for _, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		r = unicode.ToLower(r)
		if tokLen == 0 {
			w0, w1 = 0, tokenStart
		}
		if w0 != 0 {
			addFeature(dst, dims, trigramHash(w0, w1, r), trigramWeight)
			features++
		}
		w0, w1 = w1, r
		tokHash = fnvRune(tokHash, r)
		tokLen++
	}
	flush()
	if features == 0 {
		h := fnvString(text)
		dst[(h>>1)%dims] = sign(h)
		return
	}
	normalise(dst)
}

func addFeature(dst []float32, dims, h uint64, w float32) {
	dst[(h>>1)%dims] += sign(h) * w
}

func sign(h uint64) float32 {
	if h&1 == 1 {
		return -1
	}
	return 1
}

func normalise(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		// Every feature cancelled out; fall back to a fixed axis so the
		// vector stays a unit vector.
		v[0] = 1
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

const (
	fnvOffset  = 14695981039346656037
	fnvPrime   = 1099511628211
	unigramTag = 0x9e3779b97f4a7c15
	trigramTag = 0xc2b2ae3d27d4eb4f
)

func fnvRune(h uint64, r rune) uint64 {
	u := uint32(r)
	for range 4 {
		h ^= uint64(u & 0xff)
		h *= fnvPrime
		u >>= 8
	}
	return h
}

func fnvString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return mix(h)
}

func trigramHash(a, b, c rune) uint64 {
	return mix(uint64(uint32(a))<<42 ^ uint64(uint32(b))<<21 ^ uint64(uint32(c)) ^ trigramTag)
}

// mix is the splitmix64 finaliser: FNV alone leaves the low bits, which pick
// the bucket and the sign, poorly distributed.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
