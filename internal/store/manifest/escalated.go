package manifest

import (
	"context"
	"fmt"
)

// Escalated is one escalated chunk: the rule that matched, its text, and
// the redacted job that replaces it everywhere else.
type Escalated struct {
	DocID   string
	Index   int
	Version int64
	Rule    string
	// Text is the chunk's own text, kept only in escalated_chunks.
	Text string
	// Job and Hash are the redacted job's bytes and content hash.
	Job  []byte
	Hash string
}

// KeepEscalatedText records es's text in escalated_chunks, the one place
// it is kept, for its retention. A chunk version already kept is left as
// it is, so a redelivery changes nothing.
func KeepEscalatedText(ctx context.Context, q Querier, es []Escalated) error {
	if len(es) == 0 {
		return nil
	}
	c, rules, texts := columnsOf(es)
	if _, err := q.Exec(ctx, `
		INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text)
		SELECT * FROM unnest($1::text[], $2::int4[], $3::int8[], $4::text[], $5::text[])
		ON CONFLICT DO NOTHING`, c.DocIDs, c.Indexes, c.Versions, rules, texts); err != nil {
		return fmt.Errorf("keep escalated text: %w", err)
	}
	return nil
}

// RedactJobs replaces the job bytes and content hash of each escalated
// chunk's manifest row, at its version, by its redacted job's, so that the
// manifest never holds text that escalated_chunks keeps.
func RedactJobs(ctx context.Context, q Querier, es []Escalated) error {
	if len(es) == 0 {
		return nil
	}
	c, _, _ := columnsOf(es)
	jobs, hashes := make([][]byte, len(es)), make([]string, len(es))
	for i, e := range es {
		jobs[i], hashes[i] = e.Job, e.Hash
	}
	if _, err := q.Exec(ctx, `
		UPDATE ingest_manifest m SET job = t.job, content_hash = t.hash
		FROM unnest($1::text[], $2::int4[], $3::int8[], $4::bytea[], $5::text[]) AS t(doc_id, chunk_index, version, job, hash)
		WHERE m.doc_id = t.doc_id AND m.chunk_index = t.chunk_index AND m.version = t.version`,
		c.DocIDs, c.Indexes, c.Versions, jobs, hashes); err != nil {
		return fmt.Errorf("redact escalated jobs: %w", err)
	}
	return nil
}

func columnsOf(es []Escalated) (Chunks, []string, []string) {
	c := MakeChunks(len(es))
	rules, texts := make([]string, len(es)), make([]string, len(es))
	for i, e := range es {
		c.Add(e.DocID, e.Index, e.Version)
		rules[i], texts[i] = e.Rule, e.Text
	}
	return c, rules, texts
}
