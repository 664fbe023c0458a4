package bulk

import (
	"crypto/sha256"
	"encoding/hex"
)

// line is one request line of a batch and the members that wait on it:
// every chunk of a generation with the same text.
type line struct {
	generation int
	id         string
	s          size
	members    []Member
}

// lineKey names a text of a generation.
type lineKey struct {
	generation int
	id         string
}

// LineID is the custom_id of the request line that embeds text: "t" and
// the text's SHA-256 in hex, the same in every batch, so a batch holds at
// most one line per text.
func LineID(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "t" + hex.EncodeToString(sum[:])
}
