package console

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GeneratedTokenName is where GeneratedToken keeps the token by default,
// under the user's configuration directory (os.UserConfigDir).
const GeneratedTokenName = "sluice/console-operator-token"

// GeneratedPrincipal names the holder of a generated token.
const GeneratedPrincipal = "operator"

// GeneratedToken returns the operator token kept in path (the default
// under os.UserConfigDir when empty), generating it, readable by its owner
// only, when the file does not exist yet; created reports that it did. A
// console without configured tokens uses it, so a restart keeps the token
// the operator already holds, and the token is never printed: the
// operator reads it from the file.
func GeneratedToken(path string) (t Token, file string, created bool, err error) {
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return Token{}, "", false, fmt.Errorf("no place for a generated console token (%w): set CONSOLE_GENERATED_TOKEN_FILE, or CONSOLE_OPERATOR_TOKEN", err)
		}
		path = filepath.Join(dir, GeneratedTokenName)
	}
	t = Token{Principal: GeneratedPrincipal, Role: Operator}
	info, err := os.Stat(path)
	switch {
	case err == nil:
		if info.Mode().Perm()&0o077 != 0 {
			return Token{}, path, false, fmt.Errorf("console token file %s is readable by others: chmod 600 %s", path, path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return Token{}, path, false, fmt.Errorf("console token file: %w", err)
		}
		t.Secret = strings.TrimSpace(string(raw))
		if len(t.Secret) < minSecret {
			return Token{}, path, false, fmt.Errorf("console token file %s holds %d characters: delete it to generate a new token", path, len(t.Secret))
		}
		return t, path, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return Token{}, path, false, fmt.Errorf("console token file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Token{}, path, false, fmt.Errorf("console token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Token{}, path, false, fmt.Errorf("console token file: %w", err)
	}
	t.Secret = NewSecret()
	if _, err := f.WriteString(t.Secret + "\n"); err != nil {
		f.Close()
		return Token{}, path, false, fmt.Errorf("console token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return Token{}, path, false, fmt.Errorf("console token file: %w", err)
	}
	return t, path, true, nil
}
