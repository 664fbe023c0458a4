package deadletter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

func TestFilterWhereBindsEveryValue(t *testing.T) {
	t.Parallel()
	var args deadletter.Args
	f := deadletter.Filter{Source: "s", ErrorClass: "c", Disposition: "retry", Stage: "embed", Run: "r",
		Since: time.Unix(1, 0), Until: time.Unix(2, 0), State: deadletter.StateReady, Detail: "d", PayloadText: "p"}
	where := f.Where(&args)
	if len(args) != 9 {
		t.Fatalf("%d args for %q; want 9, one per value", len(args), where)
	}
	for _, v := range []string{"'s'", "'c'", "'embed'", "'d'", "'p'"} {
		if strings.Contains(where, v) {
			t.Errorf("value %s inlined in %q; want it bound", v, where)
		}
	}
	if !strings.Contains(where, "d.disposition <> 'escalate'") {
		t.Errorf("payload search %q can match an escalation", where)
	}
}
