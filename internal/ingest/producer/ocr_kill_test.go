package producer_test

import (
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// scanDocs is how many scans the killed producer reads, one a batch.
const scanDocs = 4

// A producer killed with SIGKILL while Tesseract reads a page leaves no
// Tesseract running on, and converges with no operator action: its run
// ends interrupted counting only the batches it recorded, never the
// page in flight; the next run stores every scan, each once.
func TestAProducerKilledMidPageConverges(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	b.startServices()
	corpus := writeScans(t)
	args := []string{"--source", "scans", corpus}

	killed := b.startProducerWith(args, "PRODUCER_BATCH_DOCS=1")
	var ocr int
	b.eventually(60*time.Second, "a scan recorded and the next one's page in Tesseract", func() bool {
		ocr = childNamed(killed.Pid(), "tesseract")
		return ocr != 0 && b.count(`SELECT count(*) FROM ingest_manifest`) >= 1
	})
	if err := killed.Kill(); err != nil {
		t.Fatal(err)
	}
	b.eventually(10*time.Second, "the killed producer's Tesseract to die with it", func() bool {
		return syscall.Kill(ocr, 0) != nil
	})
	var runID string
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT run_id FROM ingest_runs`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	b.eventually(30*time.Second, "the killed producer's run to end interrupted", func() bool {
		st, _, err := runs.Get(context.Background(), b.db.Pool, runID)
		return err == nil && st == runs.Interrupted
	})
	recorded := b.count(`SELECT count(*) FROM ingest_manifest WHERE run_id = $1`, runID)
	var seen, read, ocrRead *int
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT files_seen, files_read, files_ocr FROM ingest_runs WHERE run_id = $1`, runID).
		Scan(&seen, &read, &ocrRead); err != nil {
		t.Fatal(err)
	}
	if seen == nil || *seen != recorded || *read != recorded || *ocrRead != recorded {
		t.Errorf("the killed run counts %s seen, %s read, %s read by OCR; want its %d recorded scans, each once",
			fmtCount(seen), fmtCount(read), fmtCount(ocrRead), recorded)
	}

	b.finish(b.startProducerWith(args), 120*time.Second)
	b.eventually(60*time.Second, "every scan stored", func() bool {
		return b.count(`SELECT count(DISTINCT doc_id) FROM chunk_embeddings`) == scanDocs
	})
	if n := b.count(`SELECT count(*) FROM ingest_runs WHERE run_id <> $1 AND files_ocr = $2 AND files_seen = $2 AND files_parked = 0`, runID, scanDocs); n != 1 {
		t.Errorf("the second run does not count its %d scans, each read by OCR once", scanDocs)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE status = 'ready' AND version = 1`); n != scanDocs {
		t.Errorf("%d scans stored as version 1, want each of the %d once", n, scanDocs)
	}
	if n := b.count(`SELECT count(*) FROM (SELECT doc_id, chunk_index FROM chunk_embeddings GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d chunks stored twice", n)
	}
}

// writeScans writes scanDocs scans rendered from the test PDF's pages:
// three of a page and one of two, five pages for Tesseract in all.
func writeScans(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pdf := scantest.PagesPDF()
	p1, p2, p3 := scantest.RenderPage(t, pdf, 1), scantest.RenderPage(t, pdf, 2), scantest.RenderPage(t, pdf, 3)
	for i, page := range []*image.Gray{p1, p2, p3, scantest.StackPages(p3, p1)} {
		scantest.WriteFile(t, dir, fmt.Sprintf("scan-%d.png", i), scantest.PNG(t, page))
	}
	return dir
}

// childNamed returns the pid of a running child of parent whose command
// is name, or 0.
func childNamed(parent int, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis.
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) > 1 && s[open+1:end] == name && fields[0] != "Z" && fields[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	return 0
}

// fmtCount prints a count a run may not have recorded.
func fmtCount(n *int) string {
	if n == nil {
		return "no count"
	}
	return strconv.Itoa(*n)
}
