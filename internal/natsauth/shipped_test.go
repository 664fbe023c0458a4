package natsauth_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/internal/natsauth"
)

var update = flag.Bool("update", false, "rewrite the shipped nats.conf from the generator")

// The shipped server configuration is the generator's output, so the
// permissions the tests prove are the ones deployed.
func TestShippedConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", natsauth.ShippedPath)
	want := natsauth.Shipped()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from natsauth.Shipped(): run go test ./internal/natsauth -run TestShippedConfig -update", natsauth.ShippedPath)
	}
}

func TestURLWithUser(t *testing.T) {
	t.Parallel()
	got := natsauth.URLWithUser("nats://a:4222, nats://old:pw@b:4222", "producer", "p@ss/word")
	want := "nats://producer:p%40ss%2Fword@a:4222,nats://producer:p%40ss%2Fword@b:4222"
	if got != want {
		t.Fatalf("URLWithUser = %q, want %q", got, want)
	}
}
