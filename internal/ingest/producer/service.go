package producer

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// ServiceConfig are the producer command's settings.
type ServiceConfig struct {
	Common config.Common
	Config Config
	JSONL  bool
	JSON   bool
	Unit   string
	// Model is the embedding model whose tokens CHUNK_UNIT=tokens counts.
	Model string
	// Include and Exclude are the walk's glob patterns (corpus.Glob).
	Include, Exclude []string
	// MaxFileBytes excludes larger files; 0 excludes none.
	MaxFileBytes int
	// ListSkipped prints every excluded file with its reason.
	ListSkipped bool
	// StdinID is the native id of the document read from stdin.
	StdinID string
	// PolicyFile holds each source's formats list, record schema, and
	// OCR settings (see policy.Formats).
	PolicyFile string
	// TableSource is the declared table source to read instead of
	// inputs (sluice sources add table).
	TableSource string
	// Follow keeps draining the table source as its changes are
	// notified.
	Follow bool
	// FollowPoll is how long a follower waits for a notification before
	// it drains anyway.
	FollowPoll time.Duration
	// Extract bounds the extraction of each PDF, Office, OpenDocument,
	// EPUB and gzip file (corpus.LimitedExtractor).
	Extract extract.Limits
	// ExtractWorkers is how many such files are extracted at once
	// (corpus.Config.ExtractWorkers).
	ExtractWorkers int
	// S3 is the S3 source read instead of inputs, when its URL is set.
	S3 S3Settings
}

// Register registers the producer's settings on l.
func (f *ServiceConfig) Register(l *config.Loader) {
	config.RegisterCommon(l, &f.Common, "")
	l.String(&f.Config.SourceID, "source", "SOURCE", "", "source name (required): letters, digits, _ and -")
	l.Bool(&f.JSONL, "jsonl", "", false, "read files named on the command line, and stdin, as JSONL")
	l.Int(&f.Config.Chunk.Size, "chunk-size", "CHUNK_SIZE", chunk.DefaultSize, "largest chunk, in --chunk-unit")
	l.Int(&f.Config.Chunk.Overlap, "chunk-overlap", "CHUNK_OVERLAP", chunk.DefaultOverlap, "overlap between consecutive chunks, in --chunk-unit")
	l.String(&f.Unit, "chunk-unit", "CHUNK_UNIT", string(chunk.DefaultUnit), "chunk size unit: tokens (the --embedder-model's) or chars")
	l.String(&f.Model, "embedder-model", "EMBEDDER_MODEL", embedder.DefaultModel, "embedding model whose tokenizer counts --chunk-unit tokens (approximate for a model without a known tokenizer)")
	l.Int(&f.Config.BatchDocs, "batch-docs", "PRODUCER_BATCH_DOCS", DefaultBatchDocs, "documents recorded per transaction")
	l.Duration(&f.Config.Patience, "publish-patience", "PUBLISH_PATIENCE", DefaultPatience, "how long to keep trying an unreachable NATS before recording the rest of the run as owed, for the outbox-relay to publish")
	l.Duration(&f.Config.ConfirmDelay, "confirm-delay", "PUBLISH_CONFIRM_DELAY", DefaultConfirmDelay, "how long a PubAck waits before it is recorded; chunks stored meanwhile need no record (at most "+MaxConfirmDelay.String()+")")
	l.Duration(&f.Config.HeartbeatInterval, "run-heartbeat-interval", "RUN_HEARTBEAT_INTERVAL", runs.DefaultHeartbeatInterval, "how often the producer records that its run is alive, with its progress")
	l.Duration(&f.Config.HeartbeatTimeout, "run-heartbeat-timeout", "RUN_HEARTBEAT_TIMEOUT", runs.DefaultHeartbeatTimeout, "how long the producer may stay silent before its run, once its chunks have settled, ends interrupted (at least "+strconv.Itoa(runs.MinHeartbeatBeats)+" intervals)")
	l.Bool(&f.Config.Secrets.WithholdDocument, "withhold-secret-documents", "WITHHOLD_SECRET_DOCUMENTS", false, "escalate every chunk of a document in which a secret is found, not only the chunks the secret touches")
	l.Bool(&f.Config.Sync, "sync", "", false, "after a run that read its whole input without error, delete the source's documents the run did not read")
	l.Float(&f.Config.MaxDeleteFraction, "max-delete-fraction", "MAX_DELETE_FRACTION", DefaultMaxDeleteFraction, "the largest share of the source's documents a --sync may delete; a sync that would delete more is refused (1 allows everything)")
	l.Strings(&f.Include, "include", "", "read only the files of a walked directory that match one of these patterns (repeat, or separate with commas): a name such as '*.md', or a path under the directory such as 'docs/**/*.md'")
	l.Strings(&f.Exclude, "exclude", "", "leave out the files and directories of a walked directory that match one of these patterns (repeat, or separate with commas), such as '*.gz' or 'vendor/**'")
	l.Int(&f.MaxFileBytes, "max-file-bytes", "PRODUCER_MAX_FILE_BYTES", 0, "leave out files larger than this many bytes, counted as excluded (0: no limit; files over 64 MiB are parked as too_large)")
	l.Int64(&f.Config.MaxKeptFileBytes, "max-kept-file-bytes", "MAX_KEPT_FILE_BYTES", deadletter.DefaultMaxKeptFileBytes, "largest parked file whose bytes are kept for a replay (sluice dlq replay); a larger one is parked with its bytes not kept")
	l.Bool(&f.ListSkipped, "list-skipped", "", false, "after the summary, list every excluded file with the rule that excluded it")
	l.String(&f.StdinID, "id", "", "", "native id of the document read from stdin (-); without it the document is \""+corpus.DefaultStdinName+"\" and each piped document replaces the last")
	l.String(&f.PolicyFile, "policy-file", "POLICY_FILE", "", "per-source policy file (YAML); the producer reads each source's formats list from it")
	l.Bool(&f.JSON, "json", "", false, "print the summary as JSON")
	l.String(&f.TableSource, "table-source", "", "", "read the declared table source of this name (sluice sources add table) instead of inputs: a first load, then its queued changes")
	l.Bool(&f.Follow, "follow", "", false, "with --table-source or --s3: keep running, applying the source's changes as they are committed (a table's) or notified (an S3 store's events)")
	l.Duration(&f.FollowPoll, "follow-poll", "FOLLOW_POLL", DefaultFollowPoll, "with --follow: the longest wait for a change notification before draining (a table) or listing (an S3 prefix) anyway")
	registerLimits(l, &f.Extract)
	l.Int(&f.ExtractWorkers, "extract-workers", "EXTRACT_WORKERS", corpus.DefaultExtractWorkers, "files of a document format (PDF, scans, Office, ...) extracted at once, each by its own tool process within the --extract-* limits; yielded in walk order")
	registerS3(l, &f.S3)
}

// validateLimits names the extraction setting that is negative, which
// has no meaning.
func validateLimits(lim extract.Limits) error {
	for _, c := range []struct {
		flag  string
		value int64
		def   string
	}{
		{"extract-timeout", int64(lim.Timeout), extract.DefaultTimeout.String()},
		{"extract-max-bytes", lim.MaxBytes, strconv.FormatInt(extract.DefaultMaxBytes, 10)},
		{"extract-max-pages", int64(lim.MaxPages), strconv.Itoa(extract.DefaultMaxPages)},
		{"extract-max-entries", int64(lim.MaxEntries), strconv.Itoa(extract.DefaultMaxEntries)},
		{"extract-max-uncompressed", lim.MaxUncompressed, strconv.FormatInt(extract.DefaultMaxUncompressed, 10)},
		{"extract-max-memory", lim.MaxMemory, strconv.FormatInt(extract.DefaultMaxMemory, 10)},
	} {
		if c.value < 0 {
			return fmt.Errorf("--%s is negative: set a positive value, such as the default %s", c.flag, c.def)
		}
	}
	return lim.Validate()
}

// RegisterLimits registers the extraction limits on l, with the
// producer's names and defaults (extract's), for the commands that read
// files as the producer does.
func RegisterLimits(l *config.Loader, lim *extract.Limits) { registerLimits(l, lim) }

// ValidateLimits names the extraction setting that has no meaning.
func ValidateLimits(lim extract.Limits) error { return validateLimits(lim) }

// registerLimits registers the extraction limits, whose defaults are
// extract's.
func registerLimits(l *config.Loader, lim *extract.Limits) {
	l.Duration(&lim.Timeout, "extract-timeout", "EXTRACT_TIMEOUT", extract.DefaultTimeout, "longest extraction of one PDF, Office, OpenDocument, EPUB or gzip file; a file past it is parked as extract_timeout")
	l.Int64(&lim.MaxBytes, "extract-max-bytes", "EXTRACT_MAX_BYTES", extract.DefaultMaxBytes, "largest file extracted, in bytes; a larger one is parked as too_large")
	l.Int(&lim.MaxPages, "extract-max-pages", "EXTRACT_MAX_PAGES", extract.DefaultMaxPages, "most pages of a PDF extracted; a longer one is parked as too_large")
	l.Int(&lim.MaxEntries, "extract-max-entries", "EXTRACT_MAX_ENTRIES", extract.DefaultMaxEntries, "most zip entries of an Office, OpenDocument or EPUB file; more are parked as too_large")
	l.Int64(&lim.MaxUncompressed, "extract-max-uncompressed", "EXTRACT_MAX_UNCOMPRESSED", extract.DefaultMaxUncompressed, "most bytes inflated from one zip-based or gzip file, and of text extracted from any; more are parked as extract_memory")
	l.Int64(&lim.MaxMemory, "extract-max-memory", "EXTRACT_MAX_MEMORY", extract.DefaultMaxMemory, "address space, in bytes, of each PDF tool (pdfinfo, pdftotext); a tool that runs out parks its file as extract_memory")
}

// Validate checks the settings the flags and the environment gave.
func (f *ServiceConfig) Validate() error {
	if err := validateLimits(f.Extract); err != nil {
		return err
	}
	if f.TableSource != "" && f.Config.SourceID == "" {
		f.Config.SourceID = f.TableSource
	}
	if f.TableSource != "" && f.Config.SourceID != f.TableSource {
		return fmt.Errorf("--source %s and --table-source %s: a table source's documents are its own source; drop --source", f.Config.SourceID, f.TableSource)
	}
	if err := f.S3.validate(f); err != nil {
		return err
	}
	if f.Follow && f.TableSource == "" && f.S3.URL == "" {
		return fmt.Errorf("--follow needs --table-source or --s3: name the source to follow")
	}
	c := f.producerConfig()
	return c.Validate()
}

// producerConfig is the producer's Config with the chunk unit and the
// model's tokenizer the settings name.
func (f *ServiceConfig) producerConfig() Config {
	c := f.Config
	c.Chunk.Unit = chunk.Unit(f.Unit)
	c.Chunk.Tokens, _ = tokens.ForModel(f.Model)
	return c
}

// withPolicy is the producer's Config with the source's policy applied,
// and the policy's formats.
func (f *ServiceConfig) withPolicy() (Config, policy.Formats, error) {
	cfg := f.producerConfig()
	formats, err := policy.LoadFormats(f.PolicyFile, corpus.CheckFormat)
	if err != nil {
		return cfg, formats, service.UsageError(err)
	}
	cfg.Secrets.Allow = formats.SecretsAllow(cfg.SourceID)
	return cfg, formats, nil
}

// Run is the producer command: it records and publishes the inputs named
// in args and prints the run's summary on stdout.
func Run(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	var f ServiceConfig
	inputs, err := service.Load("producer", args, lookup, stderr, &f)
	if err != nil {
		return err
	}
	if f.TableSource != "" || f.S3.URL != "" {
		return runSource(ctx, &f, inputs, lookup, stdout, stderr)
	}
	if len(inputs) == 0 {
		return service.UsageError(fmt.Errorf("no inputs: name files, directories, or - for stdin"))
	}
	cfg, formats, err := f.withPolicy()
	if err != nil {
		return err
	}
	tally := &FileTally{List: f.ListSkipped}
	reader, ocr, err := f.reader(inputs, stdin, cfg, formats, tally)
	if err != nil {
		return service.UsageError(err)
	}
	rt, err := service.Start(ctx, "producer", f.Common, service.StartConfig{MaxConns: 4, NATSOptional: true}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := f.checkSettings(ctx, rt, cfg, ocr); err != nil {
		return err
	}
	p, err := New(cfg, rt.Pool, rt.JS, rt.Log)
	if err != nil {
		return err
	}
	if slices.Contains(inputs, corpus.Stdin) && !f.JSONL && f.StdinID == "" {
		rt.Log.Warn().Msg("the document read from stdin gets the id \"" + corpus.DefaultStdinName + "\": a later piped document replaces it; name each with --id")
	}
	tally.Metrics = NewFileMetrics(rt.Registry)
	p.Files, p.OCRMetrics = tally, NewOCRMetrics(rt.Registry)
	p.DeleteMetrics = erase.NewMetrics(rt.Registry)
	p.Progress = progress(stderr, rt)
	p.Crash = crashpoint.FromEnv(lookup)
	p.Explain = func(err error) error { return f.Common.Fault("producer", err, false) }
	rt.Started()
	start := time.Now()
	sum, err := p.Run(ctx, reader)
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(stderr)
	}
	if perr := printSummary(stdout, sum, time.Since(start), f.JSON); perr != nil && err == nil {
		err = perr
	}
	return err
}

// reader is the corpus reader of inputs under the source's policy, and
// the source's OCR settings it reads scans with.
func (f *ServiceConfig) reader(inputs []string, stdin io.Reader, cfg Config, formats policy.Formats, tally *FileTally) (*corpus.Reader, extract.OCR, error) {
	ocr := OCRSettings(formats.OCR(cfg.SourceID))
	reader, err := corpus.NewReader(corpus.Config{Inputs: inputs, JSONL: f.JSONL, Stdin: stdin, StdinName: f.StdinID,
		Include: f.Include, Exclude: f.Exclude, MaxFileBytes: int64(f.MaxFileBytes), Formats: formats.For(cfg.SourceID),
		Records: recordSchema(formats, cfg.SourceID), Extractor: corpus.LimitedExtractor{Limits: f.Extract, OCR: ocr}, ExtractWorkers: f.ExtractWorkers, OnFile: tally.Observe})
	return reader, ocr, err
}

// checkSettings logs the tokenizer the chunks are counted with and
// refuses OCR languages that are not installed.
func (f *ServiceConfig) checkSettings(ctx context.Context, rt *service.Runtime, cfg Config, ocr extract.OCR) error {
	if cfg.Chunk.Unit == chunk.UnitTokens {
		tokens.Log(rt.Log, f.Model, cfg.Chunk.Tokens)
	}
	if err := CheckOCR(ctx, ocr, rt.Log); err != nil {
		return service.UsageError(err)
	}
	return nil
}

// progress reports after each batch: a one-line bar on a terminal, a log
// line at most every few seconds otherwise.
func progress(stderr io.Writer, rt *service.Runtime) func(Summary) {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return func(s Summary) {
			fmt.Fprintf(stderr, "\r\033[Kdocuments %d (new %d, changed %d, unchanged %d, parked %d) · chunks published %d",
				s.Seen, s.New, s.Changed, s.Unchanged, s.Failed, s.Chunks)
		}
	}
	var last time.Time
	return func(s Summary) {
		if time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		rt.Log.Info().Int("documents", s.Seen).Int("chunks_published", s.Chunks).Msg("progress")
	}
}

// codecCounts is "windows-1252 3, utf-16le 1": most first, then by name.
func codecCounts(m map[string]int) string {
	codecs := slices.Collect(maps.Keys(m))
	slices.SortFunc(codecs, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(codecs))
	for i, c := range codecs {
		parts[i] = fmt.Sprintf("%s %d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

func printSummary(w io.Writer, s Summary, took time.Duration, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(s)
	}
	_, err := fmt.Fprintf(w, "run %s\n  files: %s\n  documents: %d seen, %d new, %d changed, %d unchanged, %d empty, %d parked\n  chunks published: %d in %s\n",
		s.RunID, s.Files, s.Seen, s.New, s.Changed, s.Unchanged, s.Empty, s.Failed, s.Chunks, took.Round(time.Millisecond))
	if err == nil && s.Escalated > 0 {
		_, err = fmt.Fprintf(w, "  chunks escalated: %d (a secret touches them; held back for review: sluice dlq ls --disposition escalate, and \"Runbook: escalation\" in docs/operations.md for a false positive)\n", s.Escalated)
	}
	if err == nil && len(s.Redecoded) > 0 {
		_, err = fmt.Fprintf(w, "  documents re-decoded: %s (not UTF-8; check their text, or convert them to UTF-8)\n", codecCounts(s.Redecoded))
	}
	if err == nil && s.Republished > 0 {
		_, err = fmt.Fprintf(w, "  owed chunks of earlier runs published first: %d\n", s.Republished)
	}
	if err == nil && s.Deleted+s.TombstonesUnknown > 0 {
		_, err = fmt.Fprintf(w, "  documents deleted: %d (tombstones naming no document: %d)\n", s.Deleted, s.TombstonesUnknown)
	}
	if err == nil && s.SyncSkipped != "" {
		_, err = fmt.Fprintf(w, "  sync deleted nothing: %s\n", s.SyncSkipped)
	}
	if err == nil && s.Owed > 0 {
		_, err = fmt.Fprintf(w, "  chunks owed (NATS unreachable; the outbox-relay publishes them when it answers): %d\n", s.Owed)
	}
	if err == nil && s.Files.ExcludedTotal() > 0 && s.ExcludedFiles == nil {
		_, err = fmt.Fprintln(w, "  list the excluded files with --list-skipped; see \"What a run reads\" in docs/operations.md")
	}
	if err == nil && len(s.ExcludedFiles) > 0 {
		_, err = fmt.Fprintln(w, "excluded files:")
		for _, e := range s.ExcludedFiles {
			if err == nil {
				_, err = fmt.Fprintf(w, "  %s\t%s: %s\n", e.Path, e.Reason, corpus.Exclusion(e.Reason).Describe())
			}
		}
	}
	return err
}

// recordSchema is source's record schema from the policy file, or nil
// when it has none and its record files are read as text.
func recordSchema(formats policy.Formats, source string) *extract.RecordSchema {
	r, ok := formats.Records(source)
	if !ok {
		return nil
	}
	return &extract.RecordSchema{IDColumn: r.ID, TextColumns: r.Text, MetadataColumns: r.Metadata, Required: r.Required}
}
