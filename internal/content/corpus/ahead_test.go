package corpus

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// slowExtractor takes a while over each file, counting how many it reads
// at once.
type slowExtractor struct {
	inFlight, most atomic.Int32
	wait           func(ctx context.Context, path string)
}

func (e *slowExtractor) Extract(ctx context.Context, path string, _ extract.Detection) (*extract.Document, error) {
	n := e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	for m := e.most.Load(); n > m && !e.most.CompareAndSwap(m, n); m = e.most.Load() {
	}
	e.wait(ctx, path)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &extract.Document{Sections: []extract.Section{{Text: "from " + filepath.Base(path)}}}, nil
}

// pdfTree writes PDFs with a text file among them.
func pdfTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	pdf := "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
	writeTree(t, root, map[string]string{"p1.pdf": pdf, "p2.pdf": pdf, "p3.pdf": pdf, "p3b.txt": "plain", "p4.pdf": pdf, "p5.pdf": pdf})
	return root
}

// Files of a document format are extracted by ExtractWorkers at once and
// yielded in walk order, each accounted for (OnFile) just before it is
// yielded, so that what a caller records always adds up.
func TestExtractWorkersReadAheadInWalkOrder(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 2} {
		root := pdfTree(t)
		x := &slowExtractor{wait: func(context.Context, string) { time.Sleep(100 * time.Millisecond) }}
		accounted := 0
		var names []string
		r, err := NewReader(Config{Inputs: []string{root}, Extractor: x, ExtractWorkers: workers,
			OnFile: func(e FileEvent) { accounted++ }})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Walk(t.Context(), func(d Document) error {
			names = append(names, filepath.Base(d.File))
			if accounted != len(names) {
				t.Errorf("workers %d: %d files accounted for when %s is yielded as the %dth", workers, accounted, d.NativeID, len(names))
			}
			if d.Status != StatusOK || d.SHA256 == "" {
				t.Errorf("workers %d: %s = %+v", workers, d.NativeID, d)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := []string{"p1.pdf", "p2.pdf", "p3.pdf", "p3b.txt", "p4.pdf", "p5.pdf"}; !slices.Equal(names, want) {
			t.Errorf("workers %d: yielded %q, want walk order %q", workers, names, want)
		}
		if want := int32(workers); x.most.Load() != want {
			t.Errorf("workers %d: %d extractions at once, want %d", workers, x.most.Load(), want)
		}
	}
}

// A walk stopped by its function while files are being extracted ahead
// stops them, and returns only once every worker has returned: no tool
// outlives the walk.
func TestAStoppedWalkLeavesNoExtractionRunning(t *testing.T) {
	t.Parallel()
	root := pdfTree(t)
	ahead := make(chan struct{}) // closed once a second file is being read
	var once sync.Once
	x := &slowExtractor{wait: func(ctx context.Context, path string) {
		if filepath.Base(path) == "p1.pdf" {
			select { // the first file returns once another is read ahead
			case <-ahead:
			case <-time.After(10 * time.Second):
			}
			return
		}
		once.Do(func() { close(ahead) })
		<-ctx.Done() // the others hang until the walk stops them
	}}
	r, err := NewReader(Config{Inputs: []string{root}, Extractor: x, ExtractWorkers: 3})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	err = r.Walk(t.Context(), func(Document) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("walk = %v, want the function's error", err)
	}
	if n := x.inFlight.Load(); n != 0 {
		t.Errorf("%d extractions still running after the walk returned", n)
	}
	if x.most.Load() < 2 {
		t.Errorf("%d extractions at once, want the files read ahead", x.most.Load())
	}
}
