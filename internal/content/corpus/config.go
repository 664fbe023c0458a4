package corpus

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// Defaults for Config.
const (
	// DefaultMaxDocumentBytes is the default Config.MaxDocumentBytes.
	DefaultMaxDocumentBytes = 64 << 20
	// DefaultMaxLineBytes is the default Config.MaxLineBytes.
	DefaultMaxLineBytes = 16 << 20
	// DefaultStdinName is the default Config.StdinName.
	DefaultStdinName = "stdin"
	// Stdin is the input name that reads standard input.
	Stdin = "-"
)

// DefaultFormats returns the extensions a directory walk reads by default:
// plain text (including files with no extension), Markdown, HTML and JSONL.
// The map is new on every call; callers may change it.
func DefaultFormats() map[string]Format {
	return map[string]Format{
		"": FormatText, ".txt": FormatText, ".text": FormatText,
		".md": FormatMarkdown, ".markdown": FormatMarkdown, ".mdown": FormatMarkdown, ".mkd": FormatMarkdown,
		".html": FormatHTML, ".htm": FormatHTML, ".xhtml": FormatHTML,
		".jsonl": FormatJSONL,
	}
}

// Config configures a Reader.
type Config struct {
	// Inputs are the files, directories and Stdin ("-") to read, in order.
	// Required.
	Inputs []string

	// Formats maps a lower-case file extension, dot included ("" for files
	// without one), to the Format of the files that carry it. In a directory
	// walk, files whose extension is not a key are skipped (and reported to
	// OnSkip). A file named directly in Inputs is always read: with the
	// format of its extension, or as text when the extension is unknown.
	// Defaults to DefaultFormats().
	Formats map[string]Format

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

	// OnSkip is told about every directory entry a walk passes over, with
	// one of the Skip* reasons, so that the caller can log or count it:
	// hidden entries, extensions not in Formats, symlinks that leave the
	// root, dangle or point to a directory, and special files. Skipped
	// entries are not documents and are not yielded. Defaults to ignoring
	// them.
	OnSkip func(path, reason string)
}

func (c *Config) applyDefaults() {
	if c.Formats == nil {
		c.Formats = DefaultFormats()
	}
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
	if c.OnSkip == nil {
		c.OnSkip = func(string, string) {}
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
	if stdin > 1 {
		errs = append(errs, errors.New("stdin (-) is named more than once: it can be read only once"))
	}
	for _, ext := range slices.Sorted(maps.Keys(c.Formats)) {
		f := c.Formats[ext]
		if ext != "" && (!strings.HasPrefix(ext, ".") || strings.ToLower(ext) != ext) {
			errs = append(errs, fmt.Errorf("format extension %q: write it lower-case with its dot, like \".txt\"", ext))
		}
		switch f {
		case FormatText, FormatMarkdown, FormatHTML, FormatJSONL:
		default:
			errs = append(errs, fmt.Errorf("format %q for extension %q: use text, markdown, html or jsonl", f, ext))
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
