package erase

import (
	"fmt"
	"strings"
)

// UnknownDocumentsError is a request naming doc ids that are not
// documents of its source. It matches ErrUnknownDocument.
type UnknownDocumentsError struct {
	// SourceID is the request's source.
	SourceID string
	// DocIDs are the ids no document of SourceID has, sorted.
	DocIDs []string
}

// Error names the unknown ids and where to find the source's documents.
func (e *UnknownDocumentsError) Error() string {
	return fmt.Sprintf("%s %s: no document of source %q has %s (see sluice docs ls --source %s)",
		ErrUnknownDocument, quoted(e.DocIDs), e.SourceID, idWord(len(e.DocIDs)), e.SourceID)
}

// Is matches ErrUnknownDocument.
func (e *UnknownDocumentsError) Is(target error) bool { return target == ErrUnknownDocument }

func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func idWord(n int) string {
	if n == 1 {
		return "this id"
	}
	return "these ids"
}
