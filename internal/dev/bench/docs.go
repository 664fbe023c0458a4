package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// ScenarioPipelineDocs is the 384-dimension pipeline over documents of
// realistic sizes: 1 to 40 chunks each, about 8 at the median, where the
// other pipeline runs have one chunk a document. What a document costs
// once (its row, its secrets scan, its chunking, its readiness) is
// spread over its chunks here, as in a real corpus.
const ScenarioPipelineDocs = "pipeline-docs"

// Shape of the documents of ScenarioPipelineDocs: chunk counts are drawn
// from a log-normal distribution with median docsMedianChunks and
// log-spread docsSpread, cut to 1..docsMaxChunks. The exact count is the
// producer's own chunking of the generated text.
const (
	docsMedianChunks = 8
	docsSpread       = 0.8
	docsMaxChunks    = 40
	// docsTokensPerChunk is how many tokens of text a drawn chunk gets,
	// so that k drawn chunks chunk to about k: a chunk is its size less
	// its overlap (448 new tokens) at most, and the chunker cuts at a
	// paragraph's or a sentence's end before that, at about 360 on this
	// prose (measured).
	docsTokensPerChunk = 360
)

// DocsStats describes a corpus of multi-chunk documents.
type DocsStats struct {
	Documents int `json:"documents"`
	Chunks    int `json:"chunks"`
	// MinChunks, MedianChunks and MaxChunks are the spread of the
	// documents' chunk counts under the producer's default chunking.
	MinChunks    int     `json:"min_chunks"`
	MedianChunks float64 `json:"median_chunks"`
	MaxChunks    int     `json:"max_chunks"`
	Bytes        int64   `json:"bytes"`
}

// GenerateDocsCorpus writes a deterministic JSONL corpus of documents of
// realistic sizes to w, until they hold at least chunks chunks under the
// producer's default chunking, and returns what it wrote.
func GenerateDocsCorpus(w io.Writer, chunks int, seed uint64) (DocsStats, error) {
	rng := rand.New(rand.NewPCG(seed, 0xd0c5))
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	var stats DocsStats
	var counts []int
	for stats.Chunks < chunks {
		text, n := docText(rng, drawChunks(rng))
		rec := jsonlRecord{ID: docID(stats.Documents), Text: text,
			Metadata: map[string]string{"shard": fmt.Sprintf("s%d", stats.Documents%8), "kind": "manual"}}
		if err := enc.Encode(rec); err != nil {
			return stats, fmt.Errorf("docs corpus: %w", err)
		}
		counts = append(counts, n)
		stats.Documents++
		stats.Chunks += n
	}
	if err := bw.Flush(); err != nil {
		return stats, fmt.Errorf("docs corpus: %w", err)
	}
	stats.Bytes = cw.n
	stats.MinChunks, stats.MaxChunks = slices.Min(counts), slices.Max(counts)
	f := make([]float64, len(counts))
	for i, c := range counts {
		f[i] = float64(c)
	}
	stats.MedianChunks = median(f)
	return stats, nil
}

// drawChunks draws a document's size in chunks.
func drawChunks(rng *rand.Rand) int {
	k := int(math.Round(docsMedianChunks * math.Exp(docsSpread*rng.NormFloat64())))
	return min(max(k, 1), docsMaxChunks)
}

// docText is a document of about k chunks, and at most docsMaxChunks,
// and its count of chunks: paragraphs of prose from the vocabulary, a
// blank line between them.
func docText(rng *rand.Rand, k int) (string, int) {
	for {
		text := paragraphs(rng, k)
		if n := len(chunk.Split(text, producerChunking())); n <= docsMaxChunks || k == 1 {
			return text, n
		}
		k--
	}
}

// paragraphs is prose of about k chunks.
func paragraphs(rng *rand.Rand, k int) string {
	var doc strings.Builder
	var para strings.Builder
	for left := k * docsTokensPerChunk; left > 0; {
		n := min(left, 60+rng.IntN(140))
		if doc.Len() > 0 {
			doc.WriteString("\n\n")
		}
		doc.WriteString(sentences(&para, rng, n, false))
		left -= n
	}
	return doc.String()
}

// docsChunkRecords reads the documents corpus at path and returns its
// first n chunks under the producer's default chunking, each as a
// record of its own that keeps its document's metadata.
func docsChunkRecords(path string, n int) ([]jsonlRecord, error) {
	docs, err := readCorpus(path)
	if err != nil {
		return nil, err
	}
	var out []jsonlRecord
	for _, d := range docs {
		first := len(out)
		for i, c := range chunk.Split(d.Text, producerChunking()) {
			if len(out) == n {
				break
			}
			out = append(out, jsonlRecord{ID: fmt.Sprintf("%s-%d", d.ID, i), Text: c.Text, Metadata: d.Metadata, doc: d.ID, index: i})
		}
		// A document cut at n chunks counts the chunks it keeps.
		for i := first; i < len(out); i++ {
			out[i].count = len(out) - first
		}
		if len(out) == n {
			return out, nil
		}
	}
	return nil, fmt.Errorf("documents corpus %s holds %d chunks, fewer than %d", path, len(out), n)
}

// docsCorpus returns the path of the documents corpus of at least chunks
// chunks and what it holds, generating it on first use.
func (r *runner) docsCorpus(chunks int) (string, DocsStats, error) {
	path := filepath.Join(r.work, fmt.Sprintf("docs-%d.jsonl", chunks))
	f, err := os.Create(path)
	if err != nil {
		return "", DocsStats{}, err
	}
	stats, err := GenerateDocsCorpus(f, chunks, r.cfg.Seed)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return path, stats, err
}

// producerChunking is how the bench's producers cut documents: the
// default chunking, counted with the tokenizer of the default model they
// run with, so that the chunks the bench expects are the ones they make.
func producerChunking() chunk.Config {
	c := chunk.DefaultConfig()
	c.Tokens, _ = tokens.ForModel(embedder.DefaultModel)
	return c
}
