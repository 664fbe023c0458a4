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

// The demo fails when a scan ends otherwise than Poison expects: the
// clean one not stored or not found by its text, the low one not parked
// as ocr_low_confidence with what OCR recognised.
func TestScansCheck(t *testing.T) {
	t.Parallel()
	good := scanned{Clean: "ready", Rank: 1, Low: "ocr_low_confidence", LowID: "dl_1", Recognised: "Tables oa"}
	if err := good.check(); err != nil {
		t.Fatalf("check of %+v: %v", good, err)
	}
	for name, change := range map[string]func(*scanned){
		"clean scan failed":       func(s *scanned) { s.Clean = "failed" },
		"clean scan missing":      func(s *scanned) { s.Clean = "" },
		"clean scan not found":    func(s *scanned) { s.Rank = 0 },
		"low scan stored":         func(s *scanned) { s.Low, s.LowID, s.Recognised = "", "", "" },
		"low scan parked as else": func(s *scanned) { s.Low = "no_text_layer" },
		"no recognised text kept": func(s *scanned) { s.Recognised = "" },
	} {
		sc := good
		change(&sc)
		if err := sc.check(); err == nil {
			t.Errorf("%s: check of %+v passed", name, sc)
		}
	}
}
