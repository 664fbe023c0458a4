package corpus

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Admit checks what a document's jobs will carry besides text: its native
// id and its metadata. It returns the canonical metadata and the
// document's hash (documents.content_hash), and, for a document it
// rejects, the classified reason; a rejected document is parked alone,
// and the run goes on. The same document read again admits the same.
func Admit(d Document) (json.RawMessage, string, error) {
	var rejected error
	meta, err := metadataJSON(d.Metadata)
	switch {
	case messages.ValidateNativeID(d.NativeID) != nil:
		rejected = classify.Permanent(classify.ClassInvalidMessage,
			fmt.Errorf("document id: %w", messages.ValidateNativeID(d.NativeID)))
	case err != nil:
		rejected = classify.Permanent(classify.ClassInvalidMessage, fmt.Errorf("metadata: %w", err))
	case len(meta) > messages.MaxMetadataBytes:
		rejected = classify.Permanentf(classify.ClassTooLarge, "metadata is %d bytes, over the %d-byte limit", len(meta), messages.MaxMetadataBytes)
	}
	if rejected != nil {
		meta = nil
	}
	hash, err := documentHash(d, meta, rejected)
	if err != nil {
		// Only the text can fail to hash; a valid document's text always
		// hashes, so this document is as unreadable as it gets.
		rejected = classify.Permanent(classify.ClassInvalidEncoding, err)
		hash, _ = documentHash(d, nil, rejected)
	}
	return meta, hash, rejected
}

// documentHash identifies a document's content, so an unchanged document
// is skipped. Unreadable and rejected documents hash their status, size
// and reason: re-running over the same bad record does not park it again.
func documentHash(d Document, meta json.RawMessage, rejected error) (string, error) {
	text := d.Text
	if d.Status != StatusOK || rejected != nil {
		reason := ""
		if rejected != nil {
			reason = classify.Classify(rejected).Class
		}
		text = fmt.Sprintf("\x00%s:%d:%s", d.Status, d.Size, reason)
	}
	return messages.ContentHash(text, meta)
}

// metadataJSON renders document metadata as a JSON object.
func metadataJSON(m map[string]any) (json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return messages.CanonicalJSON(b)
}
