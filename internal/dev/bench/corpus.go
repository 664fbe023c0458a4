package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/sluicehq/sluice/internal/content/chunk"
)

// PoisonMarker is the word that makes a generated chunk poison: embed-sim is
// started with a PoisonRule on it, answering 400 invalid_input for any
// request that contains it. It is not in the vocabulary, so clean chunks
// never match.
const PoisonMarker = "POISONPILL"

// CorpusOptions shapes a generated corpus.
type CorpusOptions struct {
	// Records is the number of JSONL records, and so of chunks: each record
	// is short enough to be exactly one chunk under the producer's default
	// chunking.
	Records int
	// Seed makes the corpus reproducible: the same options give the same
	// bytes.
	Seed uint64
	// PoisonPercent is the share of records, in percent, that carry
	// PoisonMarker; exactly Records×PoisonPercent/100 of them, spread at
	// random. Defaults to none.
	PoisonPercent int
	// MinTokens and MaxTokens bound each record's estimated token count.
	// Default to 120 and 260: a few hundred words, well inside one chunk.
	MinTokens, MaxTokens int
}

// CorpusStats describes a generated corpus.
type CorpusStats struct {
	Records int   `json:"records"`
	Poison  int   `json:"poison"`
	Bytes   int64 `json:"bytes"`
}

// jsonlRecord is the producer's JSONL input format.
type jsonlRecord struct {
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata"`
	// doc, index and count place a record as chunk index of count of
	// document doc, when it was cut from a longer document; a record
	// with no doc is a document of one chunk.
	doc          string
	index, count int
}

// docID is the id of a generated corpus's record i, and so of its
// document.
func docID(i int) string { return fmt.Sprintf("doc-%07d", i) }

// GenerateCorpus writes a deterministic JSONL corpus to w. Every record's
// text stays below the producer's chunk size, so the chunk count is exactly
// the record count.
func GenerateCorpus(w io.Writer, o CorpusOptions) (CorpusStats, error) {
	if o.MinTokens == 0 {
		o.MinTokens = 120
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 260
	}
	if o.MaxTokens >= chunk.DefaultSize || o.MinTokens > o.MaxTokens {
		return CorpusStats{}, fmt.Errorf("corpus: tokens %d..%d must lie below the chunk size %d", o.MinTokens, o.MaxTokens, chunk.DefaultSize)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0xc0ffee))
	poison := make([]bool, o.Records)
	for _, i := range rng.Perm(o.Records)[:o.Records*o.PoisonPercent/100] {
		poison[i] = true
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	stats := CorpusStats{Records: o.Records}
	var sb strings.Builder
	for i := range o.Records {
		target := o.MinTokens + rng.IntN(o.MaxTokens-o.MinTokens+1)
		text := sentences(&sb, rng, target, poison[i])
		if n := chunk.EstimateTokens(text); n >= chunk.DefaultSize {
			return stats, fmt.Errorf("corpus: record %d has %d tokens, more than one chunk", i, n)
		}
		if poison[i] {
			stats.Poison++
		}
		rec := jsonlRecord{ID: docID(i), Text: text,
			Metadata: map[string]string{"shard": fmt.Sprintf("s%d", i%8)}}
		if err := enc.Encode(rec); err != nil {
			return stats, fmt.Errorf("corpus: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return stats, fmt.Errorf("corpus: %w", err)
	}
	stats.Bytes = cw.n
	return stats, nil
}

// sentences builds text of about target estimated tokens from the
// vocabulary, optionally with PoisonMarker in the middle. The text is ASCII,
// which the token estimate counts at four bytes a token, so the length is
// tracked in bytes instead of re-estimating the growing text per word.
func sentences(sb *strings.Builder, rng *rand.Rand, target int, poison bool) string {
	sb.Reset()
	inSentence := 0
	sentenceLen := 6 + rng.IntN(10)
	poisoned := !poison
	targetBytes := target * 4
	for sb.Len() < targetBytes {
		w := words[rng.IntN(len(words))]
		if !poisoned && sb.Len() >= targetBytes/2 {
			w, poisoned = PoisonMarker, true
		}
		if inSentence == 0 {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(strings.ToUpper(w[:1]))
			sb.WriteString(w[1:])
		} else {
			sb.WriteByte(' ')
			sb.WriteString(w)
		}
		if inSentence++; inSentence == sentenceLen {
			sb.WriteByte('.')
			inSentence, sentenceLen = 0, 6+rng.IntN(10)
		}
	}
	if inSentence > 0 {
		sb.WriteByte('.')
	}
	return sb.String()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeCorpusFile generates a corpus into path.
func writeCorpusFile(path string, o CorpusOptions) (CorpusStats, error) {
	f, err := os.Create(path)
	if err != nil {
		return CorpusStats{}, err
	}
	stats, err := GenerateCorpus(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return stats, err
}

// readCorpus returns the records of a corpus file, for the ceilings, which
// need the pipeline's real texts and message sizes.
func readCorpus(path string) ([]jsonlRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []jsonlRecord
	dec := json.NewDecoder(bufio.NewReaderSize(f, 256<<10))
	for dec.More() {
		var r jsonlRecord
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("read corpus %s: %w", path, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}
