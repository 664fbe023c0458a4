package service

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGCSetsTheDefaultOnlyWhenGOGCIsUnset(t *testing.T) {
	restore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(restore) })

	t.Setenv("GOGC", "100")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, the GC percent became %d; want the operator's 100 kept", got)
	}

	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	tuneGC()
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Fatalf("without GOGC, the GC percent is %d; want %d", got, DefaultGCPercent)
	}
}
