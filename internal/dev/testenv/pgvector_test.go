package testenv_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// The pgvector backend is the real thing: PostgreSQL 17 with the vector
// extension 0.8 installed by the migration, listening on loopback only.
func TestPgvectorBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithPgvector())
	var server, vector, column, listen string
	err := db.Pool.QueryRow(ctx, `
		SELECT current_setting('server_version'),
		       (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
		       format_type(a.atttypid, a.atttypmod),
		       current_setting('listen_addresses')
		FROM pg_attribute a
		WHERE a.attrelid = 'chunk_embeddings'::regclass AND a.attname = 'embedding'`).Scan(&server, &vector, &column, &listen)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(server, "17.") || !strings.HasPrefix(vector, "0.8.") {
		t.Errorf("server %s with pgvector %s, want PostgreSQL 17 with pgvector 0.8", server, vector)
	}
	if !strings.HasPrefix(column, "vector(") {
		t.Errorf("chunk_embeddings.embedding is %s, want vector(N)", column)
	}
	if os.Getenv(testenv.PgvectorURLEnv) == "" && listen != "127.0.0.1" {
		t.Errorf("listen_addresses = %q, want 127.0.0.1 only", listen)
	}
}
