package manifest_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// The statuses the vector store's statements name are the manifest's.
func TestStoreNamesTheManifestsStatuses(t *testing.T) {
	t.Parallel()
	if string(manifest.DocReady) != vectorstore.DocReady || string(manifest.DocDeleted) != vectorstore.DocDeleted {
		t.Errorf("manifest %q, %q; vectorstore %q, %q", manifest.DocReady, manifest.DocDeleted, vectorstore.DocReady, vectorstore.DocDeleted)
	}
}
