// Package chunk splits document text into overlapping chunks sized for an
// embedding model.
//
// Split is pure and deterministic: the same text and Config always give the
// same chunks, which is what lets a re-run of the producer recognise chunks
// it already stored. It guarantees that
//
//   - every chunk is at most Config.Size units long, measured by
//     Config.Count: with Config.Tokens a tokenizer, by the model's own count;
//   - no chunk is empty or starts or ends with whitespace;
//   - chunks are substrings of the text, cut only at rune boundaries, so
//     valid UTF-8 in means valid UTF-8 out;
//   - every non-whitespace character of the text is in at least one chunk;
//   - chunks are in text order, each starting and ending later than the one
//     before.
//
// Cuts fall at the most natural boundary available in the second half of a
// chunk: a paragraph break, else a line break, else the end of a sentence,
// else whitespace, and only as a last resort between two runes (never
// inside a combining sequence when avoidable). Which paragraph break is
// decided by the text, not by where the chunk began. Each break is ranked
// by a hash of the text before it, and a peak is a break that outranks
// every other within a chunk's advance (Size less Overlap) either side.
// A chunk ends at the first peak past half its reach; with none in
// reach, at the highest-ranked break from which the next chunk reaches
// the next peak; else at the highest-ranked break in reach. An edit of
// one paragraph then changes the chunks around it and few others: the
// cuts after it fall back onto the unedited text's.
package chunk
