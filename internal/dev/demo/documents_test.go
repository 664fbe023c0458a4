package demo

import (
	"testing"

	"github.com/sluicehq/sluice/pkg/classify"
)

// The demo fails when a document file ends otherwise than Poison
// expects: a PDF or the DOCX not stored, the locked PDF or the bomb
// stored or parked with another class, or no PDF found by its text.
func TestFilesCheck(t *testing.T) {
	t.Parallel()
	good := func() filed {
		f := filed{Status: map[string]string{}, Class: map[string]string{}, Found: ReportPDF, Rank: 1}
		for name, class := range documentFiles {
			f.Status[name], f.Class[name] = "ready", class
			if class != "" {
				f.Status[name] = "failed"
			}
		}
		return f
	}
	if f := good(); f.check() != nil {
		t.Fatalf("check of %+v: %v", f, f.check())
	}
	for name, change := range map[string]func(*filed){
		"PDF failed":           func(f *filed) { f.Status[BoundPDF] = "failed" },
		"DOCX missing":         func(f *filed) { f.Status[MinutesDOCX] = "" },
		"PDF ready but parked": func(f *filed) { f.Class[ReportPDF] = classify.ClassCorrupt },
		"locked PDF stored":    func(f *filed) { f.Status[LockedPDF], f.Class[LockedPDF] = "ready", "" },
		"bomb parked as else":  func(f *filed) { f.Class[BombDOCX] = classify.ClassTooLarge },
		"no PDF found by text": func(f *filed) { f.Found, f.Rank = "", 0 },
	} {
		f := good()
		change(&f)
		if err := f.check(); err == nil {
			t.Errorf("%s: check of %+v passed", name, f)
		}
	}
}
