package corpus

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// dir yields the documents under root, which is resolved first so that a
// root given as a symlink is walked and "the root" means its real location.
//
// Every entry is reported to OnFile (see FileEvent): read, or excluded by
// one of the rules of Exclusion. Symlinked files are read only when they
// resolve inside the root, so that a link cannot pull in /etc/passwd;
// symlinked directories are not followed at all, which also rules out
// cycles.
func (w *walk) dir(root string) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("corpus: input %q: %w", root, err)
	}
	return filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("corpus: walk %q: %w", path, err)
		}
		if path == real {
			return nil
		}
		rel, err := filepath.Rel(real, path)
		if err != nil {
			return fmt.Errorf("corpus: walk %q: %w", path, err)
		}
		shown, slashed := filepath.Join(root, rel), filepath.ToSlash(rel)
		if reason := w.pathRule(d, slashed); reason != "" {
			if d.IsDir() {
				w.cfg.OnFile(FileEvent{Path: shown + string(filepath.Separator), Excluded: reason})
				return filepath.SkipDir
			}
			w.cfg.OnFile(FileEvent{Path: shown, Excluded: reason})
			return nil
		}
		if d.IsDir() {
			return nil
		}
		target := path
		if d.Type()&fs.ModeSymlink != 0 {
			var reason Exclusion
			if target, reason = resolveInside(real, path); reason != "" {
				w.cfg.OnFile(FileEvent{Path: shown, Excluded: reason})
				return nil
			}
		} else if !d.Type().IsRegular() {
			w.cfg.OnFile(FileEvent{Path: shown, Excluded: ExcludedSpecial})
			return nil
		}
		return w.file(target, shown, slashed, false)
	})
}

// pathRule returns the rule of a walk that excludes the entry d at rel,
// by its name and path alone, or "".
func (w *walk) pathRule(d fs.DirEntry, rel string) Exclusion {
	switch {
	case strings.HasPrefix(d.Name(), "."):
		return ExcludedHidden
	case matchAny(w.exclude, rel):
		return ExcludedGlob
	case !d.IsDir() && len(w.include) > 0 && !matchAny(w.include, rel):
		return ExcludedNotIncluded
	}
	return ""
}

// resolveInside follows the symlink at path and returns its target, or the
// rule that excludes it.
func resolveInside(root, path string) (string, Exclusion) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", ExcludedDanglingLink
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", ExcludedOutsideRoot
	}
	info, err := os.Stat(target)
	switch {
	case err != nil:
		return "", ExcludedDanglingLink
	case info.IsDir():
		return "", ExcludedSymlinkDir
	case !info.Mode().IsRegular():
		return "", ExcludedSpecial
	}
	return target, ""
}
