// Package corpus reads the documents a producer ingests: files, directory
// trees, JSONL record files and stdin.
//
// It is the pipeline's boundary with the outside world, so it turns whatever
// bytes it finds into clean text: UTF-8 (with or without a BOM), UTF-16 with
// a BOM, or legacy Windows-1252 as a fallback, with line endings normalised
// to "\n" and Unicode in NFC; HTML is reduced to its readable text.
//
// A file's format is decided by its content (extract.Detect), its name
// deciding only among text formats: source code, data files and names
// with a dot that is no extension (Apache-2.0, README.Debian) are text.
// A document format (PDF, Office, EPUB, gzip) goes to the configured
// Extractor; with none, and for binary of no known format, the file is
// yielded as StatusUnsupported naming the detected type.
//
// Every file a walk meets is reported once to Config.OnFile: excluded by
// a rule the user can see and change (an Exclusion: hidden, a glob, the
// formats list, a size limit, a symlink that leaves the tree), or read
// and yielded. The package guarantees that nothing it is asked to read
// disappears silently. A document that cannot be used — undecodable bytes, nothing but
// whitespace, an invalid JSONL line, a file over the size limit, a repeated
// native id — is still yielded, with a Status other than StatusOK and an Err
// saying why, so that the producer can record and park it. Only problems
// with the inputs themselves (a missing path, an unreadable directory) end a
// walk with an error.
//
// Admit is the check of what a document's jobs will carry besides text
// (its native id and metadata) and the document's content hash: the
// producer admits every document it reads, and a correction of a dead
// letter re-derived from its source admits it the same way.
//
// The package touches no infrastructure: it reads the file system and an
// io.Reader, nothing else.
package corpus
