package manifest

// DocStatus is a document's status in documents, one of the values its
// CHECK constraint allows. pkg/vectorstore names DocReady and DocDeleted
// in its statements too (vectorstore.DocReady, vectorstore.DocDeleted);
// a test holds the two the same, so that this package imports no store.
type DocStatus string

// Document statuses. A version with chunks to embed is recorded
// DocPending, moves to DocProcessing as its chunks are stored, and to
// DocReady once all are — or to DocFailed while any is parked.
const (
	// DocPending is a version recorded with chunks to embed.
	DocPending DocStatus = "pending"
	// DocProcessing is a version some of whose chunks are stored.
	DocProcessing DocStatus = "processing"
	// DocReady is a version whose every chunk is stored: it is searchable.
	DocReady DocStatus = "ready"
	// DocFailed is a version with a parked chunk, or an unreadable or
	// rejected document.
	DocFailed DocStatus = "failed"
	// DocEmpty is a version with no text to embed.
	DocEmpty DocStatus = "empty"
	// DocDeleted is a tombstone: the version that deleted the document.
	// It has no chunks, and nothing of an older version may be written
	// back (see package erase).
	DocDeleted DocStatus = "deleted"
)

// DocStatuses are every document status.
var DocStatuses = []DocStatus{DocPending, DocProcessing, DocReady, DocFailed, DocEmpty, DocDeleted}

// SQL literals of the document statuses, for statements that must name a
// status in their text.
const (
	SQLDocReady   = "'" + string(DocReady) + "'"
	SQLDocFailed  = "'" + string(DocFailed) + "'"
	SQLDocEmpty   = "'" + string(DocEmpty) + "'"
	SQLDocDeleted = "'" + string(DocDeleted) + "'"
)
