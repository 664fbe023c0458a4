package producer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract/hostiletest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Hostile files among a clean load: a zip bomb of 1 GiB, the same with a
// header that claims 1 KiB, an XML
// billion laughs, a PDF of 100,000 pages and a real PDF that takes
// seconds to read, beside 40 clean documents, in one run of the real
// producer with limits a source might set. Each hostile file is parked
// with its class within its limit, the clean documents are all stored,
// the run ends, and the producer's peak memory stays far below what
// inflating the bomb would take.
func TestHostileFilesParkWithinLimitsBesideACleanLoad(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	b.startServices()
	dir := writeCorpus(t, 40)
	hostile := map[string]string{
		"bomb.docx":   classify.ClassExtractMemory,
		"liar.docx":   classify.ClassCorrupt,
		"laughs.docx": classify.ClassCorrupt,
		"pages.pdf":   classify.ClassTooLarge,
		"long.pdf":    classify.ClassExtractTimeout,
	}
	for name, data := range map[string][]byte{
		"bomb.docx": hostiletest.ZipBomb(t, 1, 1<<30), "liar.docx": hostiletest.ZipBomb(t, 1, 1024),
		"laughs.docx": hostiletest.BillionLaughs(t), "pages.pdf": hostiletest.ManyPagesPDF(100_000),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// pdftotext reads long.pdf (90,000 pages, within the 95,000 allowed)
	// in about 13 s on an idle machine, and a loaded one is only slower:
	// past the 5 s limit always, while the others, classified in a
	// fraction of a second when idle, have five times that on a machine
	// under load before a timeout would hide their class.
	hostiletest.LongPDF(t, filepath.Join(dir, "long.pdf"), 30_000)

	start := time.Now()
	p := b.startProducerWith([]string{"--source", "docs", dir},
		"EXTRACT_TIMEOUT=5s", "EXTRACT_MAX_PAGES=95000", "EXTRACT_MAX_UNCOMPRESSED=67108864")
	peak := sampleHWM(p.Pid(), p.Exited())
	b.finish(p, 2*time.Minute)
	t.Logf("the run took %s; the producer's peak RSS was %d MiB", time.Since(start).Round(time.Millisecond), peak()>>10)
	if mib := peak() >> 10; mib == 0 || mib > 300 {
		t.Errorf("the producer's peak RSS was %d MiB, want it read and under 300 MiB: the bomb inflates to 1 GiB", mib)
	}
	b.eventually(60*time.Second, "every clean document stored", func() bool {
		return b.count(`SELECT count(*) FROM documents WHERE status = 'ready'`) == 40
	})
	ids := make([]string, 0, len(hostile))
	for name := range hostile {
		ids = append(ids, messages.DocID("docs", name))
	}
	// Dead letters reach their table through the outbox and its relay.
	b.eventually(30*time.Second, "a dead letter for each hostile file", func() bool {
		return b.count(`SELECT count(*) FROM dead_letters WHERE doc_id = ANY($1) AND resolved_at IS NULL`, ids) == len(hostile)
	})
	for name, class := range hostile {
		var got string
		if err := b.db.Pool.QueryRow(context.Background(), `SELECT error_class FROM dead_letters WHERE doc_id = $1 AND resolved_at IS NULL`,
			messages.DocID("docs", name)).Scan(&got); err != nil || got != class {
			t.Errorf("%s parked as %q (%v), want %s", name, got, err, class)
		}
	}
}

// sampleHWM reads the peak resident memory (VmHWM, KiB) of process pid
// every 20 ms until exited is closed; the function it returns gives the
// highest read so far.
func sampleHWM(pid int, exited <-chan struct{}) func() int64 {
	var mu sync.Mutex
	var peak int64
	read := func() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return
		}
		var kib int64
		for line := range strings.Lines(string(b)) {
			if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kib); err == nil {
				mu.Lock()
				peak = max(peak, kib)
				mu.Unlock()
			}
		}
	}
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-exited:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
