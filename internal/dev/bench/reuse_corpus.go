package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/internal/content/chunk"
)

// Shape of the reuse scenario's corpus: documents of about
// reuseDocChunks chunks (the edit target is about a document of
// 50), and reuseRepeatShare of all chunks in documents that repeat an
// earlier one. Half the repeats follow their original at once, so that
// both are in flight together (a batch sends a text once); the others
// repeat a document far enough back for its vectors to be stored
// (reuse looks them up).
const (
	reuseDocChunks   = 50
	reuseRepeatShare = 0.3
	// reuseFarChunks is how many chunks back a far repeat's original
	// starts at least: more than the pipeline holds in flight (pull
	// loops × batch size) with room to spare.
	reuseFarChunks = 2000
)

// ReuseCorpusStats describes the reuse scenario's corpus.
type ReuseCorpusStats struct {
	Documents int `json:"documents"`
	// Chunks are the corpus's chunks under the producer's default
	// chunking, and DistinctChunks the different texts among them: the
	// fewest inputs an embedder can be sent.
	Chunks         int `json:"chunks"`
	DistinctChunks int `json:"distinct_chunks"`
	// RepeatedChunks are the chunks of documents that repeat another,
	// NearRepeats and FarRepeats the documents that repeat the one just
	// before them and one far back.
	RepeatedChunks int `json:"repeated_chunks"`
	NearRepeats    int `json:"near_repeats"`
	FarRepeats     int `json:"far_repeats"`
	// EditedChunks are the chunks of the documents once one paragraph of
	// each is edited, and EditedNewChunks those whose text is not a
	// chunk's of the corpus before the edit: the fewest inputs the edit
	// can cost.
	EditedChunks    int `json:"edited_chunks"`
	EditedNewChunks int `json:"edited_new_chunks"`
	// ManifestRows are the manifest's rows once both are stored: per
	// document the more chunks of its two versions.
	ManifestRows int `json:"manifest_rows"`
}

// reuseCorpus is the reuse scenario's two corpus files.
type reuseCorpus struct {
	path, editedPath string
	stats            ReuseCorpusStats
}

// reuseDoc is one document of the reuse corpus, as paragraphs.
type reuseDoc struct {
	paras []string
	// chunkStart is the document's first chunk's position in the corpus.
	chunkStart int
}

// GenerateReuseCorpus writes the reuse scenario's corpus of at least
// chunks chunks to w, and the same documents with one paragraph of each
// edited to edited, and returns what they hold. The edits cycle through
// a few words changed, a sentence added and a sentence removed, in the
// middle paragraph.
func GenerateReuseCorpus(w, edited io.Writer, chunks int, seed uint64) (ReuseCorpusStats, error) {
	rng := rand.New(rand.NewPCG(seed, 0x4e05e))
	cfg := producerChunking()
	var docs []reuseDoc
	var st ReuseCorpusStats
	for st.Chunks < chunks {
		d := reuseDoc{chunkStart: st.Chunks}
		repeat := len(docs) > 0 && float64(st.RepeatedChunks+reuseDocChunks) <= reuseRepeatShare*float64(st.Chunks+reuseDocChunks)
		switch far := farOriginal(rng, docs, st.Chunks); {
		case repeat && far >= 0 && st.FarRepeats < st.NearRepeats:
			d.paras = docs[far].paras
			st.FarRepeats++
		case repeat:
			d.paras = docs[len(docs)-1].paras
			st.NearRepeats++
		default:
			d.paras = strings.Split(paragraphs(rng, reuseDocChunks), "\n\n")
		}
		n := len(chunk.Split(strings.Join(d.paras, "\n\n"), cfg))
		if repeat {
			st.RepeatedChunks += n
		}
		docs = append(docs, d)
		st.Chunks += n
	}
	st.Documents = len(docs)
	return st, writeReuseDocs(w, edited, docs, &st, rng, cfg)
}

// farOriginal picks a document that starts at least reuseFarChunks
// chunks before at, or -1 when there is none.
func farOriginal(rng *rand.Rand, docs []reuseDoc, at int) int {
	n := 0
	for n < len(docs) && docs[n].chunkStart <= at-reuseFarChunks {
		n++
	}
	if n == 0 {
		return -1
	}
	return rng.IntN(n)
}

// writeReuseDocs writes docs to w and, each with its middle paragraph
// edited, to edited, and counts their chunks into st.
func writeReuseDocs(w, edited io.Writer, docs []reuseDoc, st *ReuseCorpusStats, rng *rand.Rand, cfg chunk.Config) error {
	bw, be := bufio.NewWriter(w), bufio.NewWriter(edited)
	enc, encEdited := json.NewEncoder(bw), json.NewEncoder(be)
	enc.SetEscapeHTML(false)
	encEdited.SetEscapeHTML(false)
	before := map[string]bool{}
	var after []string
	for i, d := range docs {
		meta := map[string]string{"shard": fmt.Sprintf("s%d", i%8), "kind": "manual"}
		text := strings.Join(d.paras, "\n\n")
		paras := append([]string(nil), d.paras...)
		mid := len(paras) / 2
		paras[mid] = paragraphEdits[i%len(paragraphEdits)](rng, paras[mid])
		changed := strings.Join(paras, "\n\n")
		if err := enc.Encode(jsonlRecord{ID: docID(i), Text: text, Metadata: meta}); err != nil {
			return fmt.Errorf("reuse corpus: %w", err)
		}
		if err := encEdited.Encode(jsonlRecord{ID: docID(i), Text: changed, Metadata: meta}); err != nil {
			return fmt.Errorf("reuse corpus: %w", err)
		}
		n1, n2 := 0, 0
		for _, c := range chunk.Split(text, cfg) {
			before[c.Text] = true
			n1++
		}
		for _, c := range chunk.Split(changed, cfg) {
			after = append(after, c.Text)
			n2++
		}
		st.ManifestRows += max(n1, n2)
	}
	st.DistinctChunks, st.EditedChunks = len(before), len(after)
	sent := map[string]bool{}
	for _, t := range after {
		if !before[t] && !sent[t] {
			st.EditedNewChunks++
			sent[t] = true
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("reuse corpus: %w", err)
	}
	if err := be.Flush(); err != nil {
		return fmt.Errorf("reuse corpus: %w", err)
	}
	return nil
}

// paragraphEdits are the edits made to one paragraph of each document:
// a few words changed, a sentence added, a sentence removed.
var paragraphEdits = []func(rng *rand.Rand, para string) string{
	func(rng *rand.Rand, p string) string {
		w := strings.Fields(p)
		for range 3 {
			w[rng.IntN(len(w))] = "revised"
		}
		return strings.Join(w, " ")
	},
	func(rng *rand.Rand, p string) string {
		var sb strings.Builder
		return p + " " + sentences(&sb, rng, 15, false)
	},
	func(_ *rand.Rand, p string) string {
		if _, rest, ok := strings.Cut(p, ". "); ok {
			return rest
		}
		return p + " Revised."
	},
}

// reuseCorpusFiles writes the reuse corpus of at least chunks chunks and
// its edited twin into the run's work directory.
// reuseCorpus returns the reuse corpus of the invocation's size, which
// the reuse and bulk-reuse scenarios share, generating it on first use.
func (r *runner) reuseCorpus() (*reuseCorpus, error) {
	if r.reuseFiles != nil {
		return r.reuseFiles, nil
	}
	c, err := r.reuseCorpusFiles(r.cfg.Chunks)
	if err != nil {
		return nil, err
	}
	r.reuseFiles, r.reuse = c, &c.stats
	return c, nil
}

func (r *runner) reuseCorpusFiles(chunks int) (*reuseCorpus, error) {
	c := &reuseCorpus{path: filepath.Join(r.work, fmt.Sprintf("reuse-%d.jsonl", chunks)),
		editedPath: filepath.Join(r.work, fmt.Sprintf("reuse-%d-edited.jsonl", chunks))}
	f, err := os.Create(c.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := os.Create(c.editedPath)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if c.stats, err = GenerateReuseCorpus(f, e, chunks, r.cfg.Seed); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return c, e.Close()
}
