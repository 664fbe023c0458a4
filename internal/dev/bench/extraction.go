package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/content/corpus"
)

// ScenarioExtract measures the extraction stage: the producer's
// extraction workers reading a directory of files of a document format
// (text PDFs, and scanned pages through OCR), against the extractor
// alone reading the same files one after another in one process.
const ScenarioExtract = "extract"

// Names of the extraction ratios.
const (
	// RatioPDFPerCore is the extraction workers' text PDF pages per CPU
	// second, theirs and their tools', over the extractor's alone,
	// called file after file in one process: a core's worth of work
	// measured in the CPU it takes, which other load on a shared
	// machine moves far less than it moves wall time.
	RatioPDFPerCore = "PDF pages per CPU second, extraction workers / the extractor alone"
	// RatioOCRPerCore is the extraction workers' scanned pages per CPU
	// second over Tesseract's alone, reading the pages listed in one
	// invocation: what reading a scan through the extraction stage
	// (detection, limits, a process a file, the walk's order) costs
	// over the engine itself.
	RatioOCRPerCore = "OCR pages per CPU second, extraction workers / Tesseract alone"
)

// Per-core targets of the extraction ratios: a worker may spend a fifth
// of a core on what surrounds a text extractor, a tenth on what
// surrounds OCR.
const (
	pdfPerCoreTarget = 0.8
	ocrPerCoreTarget = 0.9
)

// Extraction is what the extract scenario measured of one kind of file.
type Extraction struct {
	// Kind is "pdf" (text PDFs through pdftotext) or "ocr" (scanned
	// pages through Tesseract).
	Kind string `json:"kind"`
	// Skipped says why nothing was measured, such as a tool missing.
	Skipped string `json:"skipped,omitempty"`
	// Files and Pages are how many each measurement read, and Words how
	// many words the extractor found in them.
	Files int `json:"files"`
	Pages int `json:"pages"`
	Words int `json:"words"`
	// Alone says what the baseline runs: the extractor, file after file
	// in one process, or Tesseract on the pages listed.
	Alone string `json:"alone"`
	// Tool is the process whose peak memory is a worker's.
	Tool string `json:"tool"`
	// Workers is corpus.DefaultExtractWorkers, and Cores how many of them
	// the machine can run at once: the smaller of it and the CPUs.
	Workers int `json:"workers"`
	Cores   int `json:"cores"`
	// Reps are the repetitions, each measuring every way.
	Reps []ExtractRep `json:"reps"`
	// Median is the median of Reps, field by field.
	Median ExtractRep `json:"median"`
	// PerCore is Median's AloneCPUMsPerPage / WorkersCPUMsPerPage: the
	// pages a core's second yields through the workers over alone.
	PerCore float64 `json:"per_core"`
	// WallPerCore is Median's WorkersPagesPerSec / Cores /
	// AlonePagesPerSec: PerCore by the clock, which on a shared machine
	// also measures what else its cores are doing.
	WallPerCore float64 `json:"wall_per_core"`
	// OverParallel is Median's WorkersPagesPerSec / ParallelPagesPerSec:
	// what the walk keeps of the extractor's rate at the same
	// parallelism, the machine's own scaling across cores set aside.
	OverParallel float64 `json:"over_parallel"`
}

// ExtractRep is one repetition of one kind of the extract scenario.
type ExtractRep struct {
	// AlonePagesPerSec is the baseline, and AlonePeakRSSMiB the peak
	// resident memory of its Tool process.
	AlonePagesPerSec float64 `json:"alone_pages_per_sec"`
	AlonePeakRSSMiB  float64 `json:"alone_peak_rss_mib"`
	// AloneCPUMsPerPage is the baseline's CPU time a page: this
	// process's and its tools'.
	AloneCPUMsPerPage float64 `json:"alone_cpu_ms_per_page"`
	// ParallelPagesPerSec is the baseline run in Cores goroutines at
	// once, each on a share of the files: what the machine's cores reach
	// together with no walk around the extractor.
	ParallelPagesPerSec float64 `json:"parallel_pages_per_sec"`
	// ParallelCPUMsPerPage is their CPU time a page, which cores that
	// share caches, or a host's other guests, make more than alone.
	ParallelCPUMsPerPage float64 `json:"parallel_cpu_ms_per_page"`
	// WorkersPagesPerSec is the walk of the files' directory, as the
	// producer reads it, with Workers extraction workers, to its last
	// document; WorkerPeakRSSMiB is the peak resident memory of the
	// largest Tool process a worker ran, and Concurrent the most that ran
	// at once.
	WorkersPagesPerSec float64 `json:"workers_pages_per_sec"`
	WorkerPeakRSSMiB   float64 `json:"worker_peak_rss_mib"`
	Concurrent         int     `json:"concurrent"`
	// WorkersCPUMsPerPage is the walk's CPU time a page: the walk's, the
	// workers' and their tools'.
	WorkersCPUMsPerPage float64 `json:"workers_cpu_ms_per_page"`
}

// extractKind is one kind of file the extract scenario reads.
type extractKind struct {
	name, alone, tool string
	// files and filesQuick are how many files a measurement reads, and
	// pages how many pages each holds.
	files, filesQuick, pages int
	// write writes n files into dir and returns their paths.
	write func(dir string, n int) ([]string, error)
	// read reads files one after another the baseline's way, and
	// returns the words found.
	read func(ctx context.Context, files []string) (int, error)
	// check says what is wrong with a document the walk yielded.
	check func(corpus.Document) error
}

// extraction runs the extract scenario when it is selected.
func (r *runner) extraction(ctx context.Context) ([]Extraction, []string) {
	if !r.cfg.selected(ScenarioExtract) || ctx.Err() != nil {
		return nil, nil
	}
	var out []Extraction
	var errs []string
	for _, k := range []extractKind{pdfKind(), ocrKind()} {
		n := k.files
		if r.cfg.Quick {
			n = k.filesQuick
		}
		e, err := measureExtraction(ctx, k, filepath.Join(r.work, "extract-"+k.name), n, r.cfg.Reps)
		switch {
		case errors.Is(err, exec.ErrNotFound):
			e = Extraction{Kind: k.name, Skipped: err.Error() + ": make extract-tools installs poppler and Tesseract"}
			fmt.Fprintf(r.log, "extract %s: skipped: %v\n", k.name, err)
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s %s: %v", ScenarioExtract, k.name, err))
			continue
		default:
			fmt.Fprintf(r.log, "extract %s: %d pages, alone %.2f pages/s %.1f CPU ms a page (%d at once %.2f pages/s), %d workers %.2f pages/s %.1f CPU ms a page\n",
				k.name, e.Pages, e.Median.AlonePagesPerSec, e.Median.AloneCPUMsPerPage, e.Cores, e.Median.ParallelPagesPerSec,
				e.Workers, e.Median.WorkersPagesPerSec, e.Median.WorkersCPUMsPerPage)
		}
		out = append(out, e)
	}
	return out, errs
}

// measureExtraction writes n files of kind k into dir and reads them
// three ways, reps times, interleaved so that drift on the machine lands
// on each alike.
func measureExtraction(ctx context.Context, k extractKind, dir string, n, reps int) (Extraction, error) {
	files, err := k.write(dir, n)
	if err != nil {
		return Extraction{}, err
	}
	e := Extraction{Kind: k.name, Alone: k.alone, Tool: k.tool, Files: n, Pages: n * k.pages,
		Workers: corpus.DefaultExtractWorkers, Cores: min(corpus.DefaultExtractWorkers, runtime.NumCPU())}
	for range max(reps, 1) {
		var rep ExtractRep
		var err error
		cpu := ownCPU()
		if rep.AlonePagesPerSec, rep.AlonePeakRSSMiB, e.Words, err = readShares(ctx, k, [][]string{files}, e.Pages); err != nil {
			return e, err
		}
		rep.AloneCPUMsPerPage = msPerPage(ownCPU()-cpu, e.Pages)
		cpu = ownCPU()
		if rep.ParallelPagesPerSec, _, _, err = readShares(ctx, k, split(files, e.Cores), e.Pages); err != nil {
			return e, err
		}
		rep.ParallelCPUMsPerPage = msPerPage(ownCPU()-cpu, e.Pages)
		cpu = ownCPU()
		if err := walkExtraction(ctx, k, dir, n, e.Pages, &rep); err != nil {
			return e, err
		}
		rep.WorkersCPUMsPerPage = msPerPage(ownCPU()-cpu, e.Pages)
		e.Reps = append(e.Reps, rep)
	}
	e.Median = medianExtractRep(e.Reps)
	e.PerCore = e.Median.AloneCPUMsPerPage / e.Median.WorkersCPUMsPerPage
	e.WallPerCore = e.Median.WorkersPagesPerSec / float64(e.Cores) / e.Median.AlonePagesPerSec
	e.OverParallel = e.Median.WorkersPagesPerSec / e.Median.ParallelPagesPerSec
	return e, nil
}

// ownCPU is the CPU time of this process and of its children that have
// ended: the tools a measurement ran, each waited for before it ends.
func ownCPU() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// msPerPage is d over pages, in milliseconds.
func msPerPage(d time.Duration, pages int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(pages)
}

// split cuts files into k shares of consecutive files.
func split(files []string, k int) [][]string {
	out := make([][]string, k)
	for i := range out {
		out[i] = files[i*len(files)/k : (i+1)*len(files)/k]
	}
	return out
}

// medianExtractRep is the median of reps, field by field.
func medianExtractRep(reps []ExtractRep) ExtractRep {
	field := func(f func(ExtractRep) float64) float64 {
		v := make([]float64, len(reps))
		for i, rep := range reps {
			v[i] = f(rep)
		}
		return median(v)
	}
	return ExtractRep{
		AlonePagesPerSec:     field(func(r ExtractRep) float64 { return r.AlonePagesPerSec }),
		AlonePeakRSSMiB:      field(func(r ExtractRep) float64 { return r.AlonePeakRSSMiB }),
		AloneCPUMsPerPage:    field(func(r ExtractRep) float64 { return r.AloneCPUMsPerPage }),
		WorkersCPUMsPerPage:  field(func(r ExtractRep) float64 { return r.WorkersCPUMsPerPage }),
		ParallelCPUMsPerPage: field(func(r ExtractRep) float64 { return r.ParallelCPUMsPerPage }),
		ParallelPagesPerSec:  field(func(r ExtractRep) float64 { return r.ParallelPagesPerSec }),
		WorkersPagesPerSec:   field(func(r ExtractRep) float64 { return r.WorkersPagesPerSec }),
		WorkerPeakRSSMiB:     field(func(r ExtractRep) float64 { return r.WorkerPeakRSSMiB }),
		Concurrent:           int(field(func(r ExtractRep) float64 { return float64(r.Concurrent) })),
	}
}

// readShares reads each share of the files the baseline's way, all at
// once, and returns the pages' rate, the largest peak memory of a Tool
// process, and the words found.
func readShares(ctx context.Context, k extractKind, shares [][]string, pages int) (pagesPerSec, peakMiB float64, words int, err error) {
	counts := make([]int, len(shares))
	errs := make([]error, len(shares))
	mem := watchChildren(ctx, k.tool)
	start := time.Now()
	var wg sync.WaitGroup
	for i, share := range shares {
		wg.Go(func() { counts[i], errs[i] = k.read(ctx, share) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	peakMiB, _ = mem()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	for _, c := range counts {
		words += c
	}
	return float64(pages) / elapsed.Seconds(), peakMiB, words, nil
}

// walkExtraction reads dir as the producer does, with the default
// extraction workers, limits and OCR settings, and checks each document.
func walkExtraction(ctx context.Context, k extractKind, dir string, n, pages int, rep *ExtractRep) error {
	rd, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}, Extractor: corpus.LimitedExtractor{}})
	if err != nil {
		return err
	}
	mem := watchChildren(ctx, k.tool)
	start := time.Now()
	read := 0
	err = rd.Walk(ctx, func(d corpus.Document) error {
		if d.Status != corpus.StatusOK {
			return fmt.Errorf("%s: status %s: %v", d.NativeID, d.Status, d.Err)
		}
		read++
		return k.check(d)
	})
	elapsed := time.Since(start)
	peak, concurrent := mem()
	if err == nil && read != n {
		err = fmt.Errorf("walk read %d files of %d", read, n)
	}
	if err != nil {
		return fmt.Errorf("extraction workers: %w", err)
	}
	rep.WorkersPagesPerSec, rep.WorkerPeakRSSMiB, rep.Concurrent = float64(pages)/elapsed.Seconds(), peak, concurrent
	return nil
}

// childSample is how often watchChildren looks: a pdftotext lives for
// tens of milliseconds.
const childSample = 10 * time.Millisecond

// watchChildren samples this process's children named comm until the
// returned function is called, which returns the largest peak resident
// memory one of them reached, in MiB, and the most seen at once.
func watchChildren(ctx context.Context, comm string) func() (peakMiB float64, concurrent int) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg         sync.WaitGroup
		peakKiB    int64
		concurrent int
	)
	wg.Go(func() {
		t := time.NewTicker(childSample)
		defer t.Stop()
		for ctx.Err() == nil {
			pids := childrenNamed(comm)
			concurrent = max(concurrent, len(pids))
			for _, pid := range pids {
				if kib, ok := vmHWM(pid); ok {
					peakKiB = max(peakKiB, kib)
				}
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	})
	return func() (float64, int) {
		cancel()
		wg.Wait()
		return float64(peakKiB) / 1024, concurrent
	}
}

// childrenNamed returns the pids of this process's live children whose
// command name is comm, from each thread's list of the children it
// started: cheaper than reading every process on the machine, which
// would take CPU from the processes measured.
func childrenNamed(comm string) []int {
	lists, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []int
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if st, err := readStat(pid); err == nil && st.comm == comm {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// extractionRatios are the per-core ratios of e, with their targets.
func extractionRatios(e []Extraction) []Ratio {
	targets := map[string]struct {
		name   string
		target float64
	}{"pdf": {RatioPDFPerCore, pdfPerCoreTarget}, "ocr": {RatioOCRPerCore, ocrPerCoreTarget}}
	var out []Ratio
	for _, kind := range []string{"pdf", "ocr"} {
		t := targets[kind]
		q := Ratio{Name: t.name, Target: targetOf(t.name)}
		for _, x := range e {
			if x.Kind == kind && x.PerCore > 0 {
				met := x.PerCore >= t.target
				q.Value, q.Met = x.PerCore, &met
			}
		}
		out = append(out, q)
	}
	return out
}

// writeExtraction prints the extract scenario's figures, or why there
// are none.
func writeExtraction(b *strings.Builder, r *Report) {
	if len(r.Extraction) == 0 {
		return
	}
	b.WriteString("\n## Extraction (a tool process a file)\n\n")
	b.WriteString("| kind | reader | pages/s | CPU ms a page | peak RSS MiB a process | processes at once |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, e := range r.Extraction {
		if e.Skipped != "" {
			fmt.Fprintf(b, "| %s | skipped: %s | | | | |\n", e.Kind, e.Skipped)
			continue
		}
		m := e.Median
		fmt.Fprintf(b, "| %s | %s | %.2f | %.1f | %.0f | 1 |\n", e.Kind, e.Alone, m.AlonePagesPerSec, m.AloneCPUMsPerPage, m.AlonePeakRSSMiB)
		fmt.Fprintf(b, "| %s | the same, a share of the files in each of %d at once | %.2f | %.1f | | %d |\n", e.Kind, e.Cores, m.ParallelPagesPerSec, m.ParallelCPUMsPerPage, e.Cores)
		fmt.Fprintf(b, "| %s | %d extraction workers | %.2f | %.1f | %.0f | %d |\n", e.Kind, e.Workers, m.WorkersPagesPerSec, m.WorkersCPUMsPerPage, m.WorkerPeakRSSMiB, m.Concurrent)
	}
	for _, e := range r.Extraction {
		if e.Skipped == "" {
			fmt.Fprintf(b, "\nextract %s: %d files, %d pages, %d words, median of %d rep(s); by the clock the workers reach %.2f per core of the extractor alone over %d core(s), %.2f of the extractor as many at once\n",
				e.Kind, e.Files, e.Pages, e.Words, len(e.Reps), e.WallPerCore, e.Cores, e.OverParallel)
		}
	}
}
