package localenv_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// FreeAddr never returns an address twice in one process, however often
// the kernel offers a port again once its probe listener closes: two
// services given one metrics address would collide.
func TestFreeAddrNeverRepeats(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	for range 1000 {
		addr, err := localenv.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice in %d calls", addr, len(seen)+1)
		}
		seen[addr] = true
	}
}
