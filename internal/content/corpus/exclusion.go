package corpus

// Exclusion names the rule that kept a file out of a run. Every value is
// a stable, low-cardinality code: runs record it, metrics label by it,
// and `producer --list-skipped` prints it with Describe.
type Exclusion string

// The rules a walk excludes files by. Each can be seen in the run's
// summary and changed by the user; see Describe.
const (
	// ExcludedHidden is a file or directory whose name starts with ".",
	// in a directory walk. A hidden directory is not entered: it counts
	// as one excluded entry.
	ExcludedHidden Exclusion = "hidden"
	// ExcludedGlob is a file or directory that matches an Exclude
	// pattern. An excluded directory is not entered: it counts as one
	// excluded entry.
	ExcludedGlob Exclusion = "exclude_glob"
	// ExcludedNotIncluded is a file that matches none of the Include
	// patterns.
	ExcludedNotIncluded Exclusion = "not_included"
	// ExcludedFormat is a file whose detected format is not in Formats.
	ExcludedFormat Exclusion = "format_not_listed"
	// ExcludedSize is a file over MaxFileBytes.
	ExcludedSize Exclusion = "over_max_file_bytes"
	// ExcludedOutsideRoot is a symlink whose target is outside the walked
	// directory: a link cannot pull in /etc/passwd.
	ExcludedOutsideRoot Exclusion = "symlink_outside_tree"
	// ExcludedSymlinkDir is a symlink to a directory, never followed,
	// which also rules out cycles.
	ExcludedSymlinkDir Exclusion = "symlink_to_directory"
	// ExcludedDanglingLink is a symlink whose target does not exist.
	ExcludedDanglingLink Exclusion = "dangling_symlink"
	// ExcludedSpecial is a device, socket or pipe: not a regular file.
	ExcludedSpecial Exclusion = "not_regular_file"
)

// Exclusions lists every Exclusion, in the order summaries print them.
var Exclusions = []Exclusion{ExcludedHidden, ExcludedGlob, ExcludedNotIncluded, ExcludedFormat, ExcludedSize,
	ExcludedOutsideRoot, ExcludedSymlinkDir, ExcludedDanglingLink, ExcludedSpecial}

// Describe says what the rule is and how to change it.
func (e Exclusion) Describe() string {
	switch e {
	case ExcludedHidden:
		return "name starts with '.'; name the file itself to read it"
	case ExcludedGlob:
		return "matches an --exclude pattern"
	case ExcludedNotIncluded:
		return "matches no --include pattern"
	case ExcludedFormat:
		return "detected format is not in the source's formats (policy file)"
	case ExcludedSize:
		return "larger than --max-file-bytes"
	case ExcludedOutsideRoot:
		return "symlink to a file outside the walked directory; name the target to read it"
	case ExcludedSymlinkDir:
		return "symlink to a directory, not followed; name the directory to read it"
	case ExcludedDanglingLink:
		return "symlink to nothing"
	case ExcludedSpecial:
		return "not a regular file (device, socket or pipe)"
	}
	return string(e)
}

// FileEvent is what a walk did with one file it met. A walk reports every
// file (and every directory it does not enter) exactly once, before
// yielding anything of it: excluded, read as JSONL records, or yielded as
// one Document whose File is Path.
type FileEvent struct {
	// Path is the file as the user would name it: the input joined with
	// the file's path under it, "-" for stdin. A directory not entered
	// ends in "/".
	Path string
	// Excluded is the rule that kept the file out; empty when it was
	// read.
	Excluded Exclusion
	// Records is true for a file read as JSONL: each of its lines is a
	// document of its own, and none has File set.
	Records bool
}
