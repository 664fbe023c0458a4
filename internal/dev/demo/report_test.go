package demo

import (
	"os"
	"path/filepath"
	"testing"
)

// The report's commands name the CLI as the user can run it from where
// they are: bin/sluice after make build, its name once bin/ is on PATH.
func TestRunnable(t *testing.T) {
	wd := t.TempDir()
	outside := t.TempDir()
	for _, dir := range []string{filepath.Join(wd, "bin"), wd, outside} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sluice"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(wd)
	t.Setenv("PATH", "/nonexistent")
	for path, want := range map[string]string{
		filepath.Join(wd, "bin", "sluice"): filepath.Join("bin", "sluice"),
		filepath.Join(wd, "sluice"):        "./sluice",
		filepath.Join(outside, "sluice"):   filepath.Join(outside, "sluice"),
	} {
		if got := runnable(path); got != want {
			t.Errorf("runnable(%s) = %q, want %q", path, got, want)
		}
	}
	t.Setenv("PATH", filepath.Join(wd, "bin"))
	if got := runnable(filepath.Join(wd, "bin", "sluice")); got != "sluice" {
		t.Errorf("with bin/ on PATH: runnable = %q, want sluice", got)
	}
	if got := runnable(filepath.Join(outside, "sluice")); got != filepath.Join(outside, "sluice") {
		t.Errorf("another sluice on PATH: runnable = %q, want the demo's own path", got)
	}
}
