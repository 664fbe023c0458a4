package corpus

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Reasons passed to Config.OnSkip.
const (
	SkipHidden       = "hidden"
	SkipExtension    = "extension not in formats"
	SkipOutsideRoot  = "symlink leaves the root"
	SkipSymlinkDir   = "symlink to a directory"
	SkipDanglingLink = "dangling symlink"
	SkipSpecial      = "not a regular file"
)

// dir yields the documents under root, which is resolved first so that a
// root given as a symlink is walked and "the root" means its real location.
//
// Symlinked files are read only when they resolve inside the root, so that
// a link cannot pull in /etc/passwd; symlinked directories are not followed
// at all, which also rules out cycles.
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
		shown := filepath.Join(root, rel)
		if strings.HasPrefix(d.Name(), ".") {
			w.cfg.OnSkip(shown, SkipHidden)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		target := path
		if d.Type()&fs.ModeSymlink != 0 {
			var reason string
			if target, reason = resolveInside(real, path); reason != "" {
				w.cfg.OnSkip(shown, reason)
				return nil
			}
		} else if !d.Type().IsRegular() {
			w.cfg.OnSkip(shown, SkipSpecial)
			return nil
		}
		format, ok := w.cfg.Formats[strings.ToLower(filepath.Ext(d.Name()))]
		if !ok {
			w.cfg.OnSkip(shown, SkipExtension)
			return nil
		}
		return w.file(target, filepath.ToSlash(rel), format)
	})
}

// resolveInside follows the symlink at path and returns its target, or the
// reason to skip it.
func resolveInside(root, path string) (target, reason string) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", SkipDanglingLink
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", SkipOutsideRoot
	}
	info, err := os.Stat(target)
	switch {
	case err != nil:
		return "", SkipDanglingLink
	case info.IsDir():
		return "", SkipSymlinkDir
	case !info.Mode().IsRegular():
		return "", SkipSpecial
	}
	return target, ""
}
