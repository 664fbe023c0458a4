package producer

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
)

// Outcomes of a file, the outcome label of sluice_producer_files_total.
const (
	OutcomeRead     = "read"
	OutcomeExcluded = "excluded"
	OutcomeParked   = "parked"
)

// FileMetrics counts what runs did with the files they met.
type FileMetrics struct {
	// Files counts files by outcome (read, excluded, parked) and reason:
	// the exclusion rule, or the parked file's error class; empty for
	// read files.
	Files *prometheus.CounterVec
}

// NewFileMetrics registers the producer's file metrics on reg.
func NewFileMetrics(reg prometheus.Registerer) *FileMetrics {
	m := &FileMetrics{Files: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_producer_files_total",
		Help: "Files the producer's walks met, by outcome (read, excluded, parked) and reason (the exclusion rule or the parked file's error class).",
	}, []string{"outcome", "reason"})}
	reg.MustRegister(m.Files)
	return m
}

// ExcludedFile is one file a run left out, for --list-skipped.
type ExcludedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// FileTally accounts for every file a run's walk meets: give its Observe
// to corpus.Config.OnFile and the tally to the Producer (Producer.Files),
// which counts each whole-file document read or parked once its batch is
// recorded. Its zero value is ready; it is used from the walk's
// goroutine only.
type FileTally struct {
	// List keeps every excluded file, for --list-skipped.
	List bool
	// Metrics, when set, counts files as they are accounted for.
	Metrics *FileMetrics

	counts   runs.Files
	excluded []ExcludedFile
}

// Observe accounts for one file the walk met. A file excluded, or read
// as JSONL records, is accounted for at once; any other is yielded as a
// whole-file document, accounted for when its batch is recorded.
func (t *FileTally) Observe(e corpus.FileEvent) {
	t.counts.Seen++
	switch {
	case e.Excluded != "":
		if t.counts.Excluded == nil {
			t.counts.Excluded = map[string]int{}
		}
		t.counts.Excluded[string(e.Excluded)]++
		t.count(OutcomeExcluded, string(e.Excluded))
		if t.List {
			t.excluded = append(t.excluded, ExcludedFile{Path: e.Path, Reason: string(e.Excluded)})
		}
	case e.Records:
		t.counts.Read++
		t.count(OutcomeRead, "")
	}
}

// recorded accounts for a whole-file document whose batch was recorded:
// parked with its class, or read when the class is empty; and, when OCR
// read it, whether it waits below the bar, or was keyed by a person.
func (t *FileTally) recorded(f fileOutcome) {
	if len(f.ocr) > 0 {
		t.counts.OCR++
	}
	if f.class == classify.ClassOCRLowConfidence {
		t.counts.OCRLow++
	}
	if f.keyed && f.class == "" {
		t.counts.Keyed++
	}
	if f.class != "" {
		t.counts.Parked++
		t.count(OutcomeParked, f.class)
		return
	}
	t.counts.Read++
	t.count(OutcomeRead, "")
}

// after returns the counts as they will be once files are recorded,
// counting nothing yet: the batch's transaction records them.
func (t *FileTally) after(files []fileOutcome) runs.Files {
	next := FileTally{counts: t.counts}
	for _, f := range files {
		next.recorded(f)
	}
	return next.Counts()
}

// forget takes back n whole-file documents the walk yielded but the run
// did not record, because it stopped. A tally the walk does not report to
// (a Reader built without OnFile) has seen nothing, and has nothing to
// take back.
func (t *FileTally) forget(n int) {
	if t.counts.Seen == 0 {
		return
	}
	t.counts.Seen -= n
}

func (t *FileTally) count(outcome, reason string) {
	if t.Metrics != nil {
		t.Metrics.Files.WithLabelValues(outcome, reason).Inc()
	}
}

// Counts returns the tally so far.
func (t *FileTally) Counts() runs.Files {
	c := t.counts
	c.Excluded = maps.Clone(c.Excluded)
	if c.Excluded == nil {
		c.Excluded = map[string]int{}
	}
	return c
}

// Excluded returns the excluded files, in the order met; empty unless
// List is set.
func (t *FileTally) Excluded() []ExcludedFile { return slices.Clone(t.excluded) }
