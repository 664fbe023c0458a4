package corpus

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// Defaults for Config.
const (
	// DefaultMaxDocumentBytes is the default Config.MaxDocumentBytes.
	DefaultMaxDocumentBytes = 64 << 20
	// DefaultMaxLineBytes is the default Config.MaxLineBytes.
	DefaultMaxLineBytes = 16 << 20
	// DefaultStdinName is the default Config.StdinName.
	DefaultStdinName = "stdin"
	// DefaultExtractWorkers is how many files of a document format a
	// walk extracts at once: OCR and PDF tools use one core each.
	DefaultExtractWorkers = 2
	// Stdin is the input name that reads standard input.
	Stdin = "-"
)

// Config configures a Reader.
type Config struct {
	// Inputs are the files, directories and Stdin ("-") to read, in order.
	// Required.
	Inputs []string

	// Formats, when not empty, narrows what is read to the files whose
	// detected format (extract.Format: "text", "markdown", "html",
	// "json", "csv", "pdf", ...) is listed; the others are excluded
	// (ExcludedFormat). It applies to files named in Inputs too. Empty
	// reads every format. Defaults to empty.
	Formats []string

	// Include, when not empty, keeps only the files of a directory walk
	// that match one of its patterns (see Glob); the others are excluded
	// (ExcludedNotIncluded). Defaults to empty.
	Include []string

	// Exclude leaves out the files and directories of a directory walk
	// that match one of its patterns (see Glob), as ExcludedGlob; an
	// excluded directory is not entered. Defaults to empty.
	Exclude []string

	// MaxFileBytes, when positive, excludes the files larger than it
	// (ExcludedSize), in a walk or named in Inputs, without reading
	// them. Unlike MaxDocumentBytes, which parks what it refuses, it is a
	// choice of what the source holds. Defaults to 0: no such rule.
	MaxFileBytes int64

	// Extractor reads the files of a document format (PDF, Office, ...).
	// Defaults to nil: such files are parked as unsupported_format.
	Extractor Extractor

	// ExtractWorkers is how many files of a document format the walk
	// extracts at once: consecutive ones are read ahead by that many
	// workers, each its own tool process within the Extractor's limits,
	// and yielded in walk order. The Extractor must be safe for
	// concurrent use. Defaults to DefaultExtractWorkers.
	ExtractWorkers int

	// Records, when set, reads the record files (CSV, TSV, JSON, JSONL,
	// XLSX, ODS) record by record under the schema: each record is a
	// document of its own, its native id the file's and the record's id
	// joined by "#", and a record the schema refuses is yielded alone
	// with StatusInvalid, the rest of the file going on. The Extractor
	// must be a RecordExtractor. Defaults to nil: record files are read
	// as text (JSONL as id/text records).
	Records *extract.RecordSchema

	// JSONL reads every file named directly in Inputs, and stdin, as JSONL
	// whatever its extension. Files found in a directory walk still go by
	// their extension. Defaults to false.
	JSONL bool

	// StdinName is the native id of the document read from stdin, and the
	// name used in the native ids of its invalid lines when it is JSONL.
	// Defaults to DefaultStdinName.
	StdinName string

	// Stdin is read for the input "-". Defaults to os.Stdin.
	Stdin io.Reader

	// MaxDocumentBytes is the largest file, or stdin document, read whole.
	// A larger one is yielded with StatusInvalid and a *TooLargeError,
	// without being read. It does not bound JSONL files, which are streamed.
	// Defaults to DefaultMaxDocumentBytes (64 MiB).
	MaxDocumentBytes int64

	// MaxLineBytes is the longest JSONL line, line ending excluded. A longer
	// one is yielded with StatusInvalid and a *TooLargeError inside a
	// *LineError; the lines after it are read normally. Defaults to
	// DefaultMaxLineBytes (16 MiB).
	MaxLineBytes int

	// OnFile is told about every file the walk meets, and every
	// directory it does not enter, before anything of it is yielded; see
	// FileEvent. Defaults to ignoring them.
	OnFile func(FileEvent)
}

func (c *Config) applyDefaults() {
	if c.StdinName == "" {
		c.StdinName = DefaultStdinName
	}
	if c.Stdin == nil {
		c.Stdin = os.Stdin
	}
	if c.MaxDocumentBytes == 0 {
		c.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if c.MaxLineBytes == 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.OnFile == nil {
		c.OnFile = func(FileEvent) {}
	}
	if c.ExtractWorkers == 0 {
		c.ExtractWorkers = DefaultExtractWorkers
	}
}

// Validate reports configuration that cannot work, saying how to fix it.
// It checks the configuration as given, with zero values standing for
// their defaults.
func (c Config) Validate() error {
	var errs []error
	if len(c.Inputs) == 0 {
		errs = append(errs, errors.New("no inputs: name at least one file, directory, or - for stdin"))
	}
	stdin := 0
	for _, in := range c.Inputs {
		switch in {
		case "":
			errs = append(errs, errors.New("empty input name: remove it or use - for stdin"))
		case Stdin:
			stdin++
		}
	}
	if c.ExtractWorkers < 0 {
		errs = append(errs, fmt.Errorf("extract workers %d: give 1 or more (0 for the default, %d)", c.ExtractWorkers, DefaultExtractWorkers))
	}
	if stdin > 1 {
		errs = append(errs, errors.New("stdin (-) is named more than once: it can be read only once"))
	}
	for _, f := range c.Formats {
		if err := CheckFormat(f); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range slices.Concat(c.Include, c.Exclude) {
		if _, err := ParseGlob(p); err != nil {
			errs = append(errs, err)
		}
	}
	if c.MaxFileBytes < 0 {
		errs = append(errs, fmt.Errorf("max file bytes %d: use a positive size, or 0 for no limit", c.MaxFileBytes))
	}
	if c.Records != nil {
		if _, ok := c.Extractor.(RecordExtractor); !ok {
			errs = append(errs, errors.New("records: the extractor cannot read records: use a LimitedExtractor"))
		} else if err := c.Records.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if v, ok := c.Extractor.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.MaxDocumentBytes < 0 {
		errs = append(errs, fmt.Errorf("max document bytes %d: use a positive size, or 0 for the default of %d", c.MaxDocumentBytes, DefaultMaxDocumentBytes))
	}
	if c.MaxLineBytes < 0 {
		errs = append(errs, fmt.Errorf("max line bytes %d: use a positive size, or 0 for the default of %d", c.MaxLineBytes, DefaultMaxLineBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("corpus config: %w", err)
	}
	return nil
}

// knownFormats are the names Formats accepts: every extract.Format.
var knownFormats = []extract.Format{
	extract.FormatText, extract.FormatMarkdown, extract.FormatHTML, extract.FormatJSONL, extract.FormatJSON,
	extract.FormatXML, extract.FormatCSV, extract.FormatTSV, extract.FormatPDF, extract.FormatDOCX,
	extract.FormatPPTX, extract.FormatXLSX, extract.FormatODT, extract.FormatODP, extract.FormatODS,
	extract.FormatEPUB, extract.FormatGzip, extract.FormatPNG, extract.FormatJPEG, extract.FormatTIFF,
	extract.FormatBinary,
}

// CheckFormat reports whether name is a format Config.Formats may list,
// saying which are when it is not.
func CheckFormat(name string) error {
	if slices.Contains(knownFormats, extract.Format(name)) {
		return nil
	}
	names := make([]string, len(knownFormats))
	for i, f := range knownFormats {
		names[i] = string(f)
	}
	return fmt.Errorf("format %q: use one of %s", name, strings.Join(names, ", "))
}
