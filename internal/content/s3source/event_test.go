package s3source_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/content/s3source"
)

// An event touches a source when one of its records puts or deletes an
// object of the source's bucket under its prefix, the key as given or
// URL-decoded.
func TestLocationTouches(t *testing.T) {
	t.Parallel()
	loc, _ := s3source.ParseLocation("s3://corpus/docs/")
	record := func(name, bucket, key string) string {
		return `{"Records":[{"eventName":"` + name + `","s3":{"bucket":{"name":"` + bucket + `"},"object":{"key":"` + key + `","size":3}}}]}`
	}
	tests := []struct {
		name, data string
		want       bool
	}{
		{"a put under the prefix", record("s3:ObjectCreated:Put", "corpus", "docs/a.md"), true},
		{"a delete under the prefix", record("s3:ObjectRemoved:Delete", "corpus", "docs/a.md"), true},
		{"AWS's name without s3:", record("ObjectCreated:CompleteMultipartUpload", "corpus", "docs/a.md"), true},
		{"a URL-encoded key", record("s3:ObjectCreated:Put", "corpus", "docs%2Fa+b.md"), true},
		{"another prefix", record("s3:ObjectCreated:Put", "corpus", "other/a.md"), false},
		{"another bucket", record("s3:ObjectCreated:Put", "archive", "docs/a.md"), false},
		{"a read", record("s3:ObjectAccessed:Get", "corpus", "docs/a.md"), false},
		{"a test event", `{"Service":"S3","Event":"s3:TestEvent"}`, false},
		{"not JSON", `put docs/a.md`, false},
	}
	for _, tt := range tests {
		if got := loc.Touches([]byte(tt.data)); got != tt.want {
			t.Errorf("%s: Touches = %v, want %v", tt.name, got, tt.want)
		}
	}
}
