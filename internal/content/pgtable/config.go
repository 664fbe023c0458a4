package pgtable

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Config names a table source.
type Config struct {
	// Source is the source's name; its documents' ids are the source
	// and the row's key. Required.
	Source string
	// Table is the table, schema-qualified ("public.articles"); a name
	// without a schema is in public. Required.
	Table string
	// ID is the primary key column; its value as text is the document's
	// native id. Required.
	ID string
	// Text are the columns whose values, joined by blank lines, are the
	// document's text. At least one is required.
	Text []string
	// Meta are the columns copied into the document's metadata.
	Meta []string
	// Filter is an SQL condition on the table's columns: rows that do not
	// match it are not documents, and a row that stops matching it is
	// deleted from the index. Empty takes every row.
	Filter string
	// MaxKeys is the most keys one Batch drains; the rest wait for the
	// next. Defaults to DefaultMaxKeys.
	MaxKeys int
}

// DefaultMaxKeys is Config.MaxKeys's default.
const DefaultMaxKeys = 20000

// Validate says what is missing and how to give it.
func (c Config) Validate() error {
	switch {
	case c.Source == "":
		return errors.New("table source: name the source")
	case c.Table == "":
		return errors.New("table source: name the table with --table schema.table")
	case c.ID == "":
		return errors.New("table source: name the primary key column with --id")
	case len(c.Text) == 0:
		return errors.New("table source: name the text columns with --text col1,col2")
	case c.MaxKeys < 0:
		return errors.New("table source: the most keys per batch must be positive")
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
}

// ident is the table's quoted, schema-qualified name.
func (c Config) ident() string {
	schema, name, ok := strings.Cut(c.Table, ".")
	if !ok {
		schema, name = "public", c.Table
	}
	return pgx.Identifier{schema, name}.Sanitize()
}

// filter is the WHERE condition of the table's documents.
func (c Config) filter() string {
	if strings.TrimSpace(c.Filter) == "" {
		return "true"
	}
	return "(" + c.Filter + ")"
}

// triggerName is the name of the source's triggers on the table.
func (c Config) triggerName(suffix string) string {
	return pgx.Identifier{"sluice_sync_" + c.Source + "_" + suffix}.Sanitize()
}

// ResolveDSN turns a DSN reference into the connection string:
// "env:NAME" reads the variable NAME through lookup, "file:PATH" reads
// the file (trailing newline dropped), anything else is the DSN itself.
func ResolveDSN(ref string, lookup func(string) (string, bool)) (string, error) {
	switch {
	case strings.HasPrefix(ref, "env:"):
		name := strings.TrimPrefix(ref, "env:")
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("table source DSN %s: set the environment variable %s to the application database's connection string", ref, name)
		}
		return v, nil
	case strings.HasPrefix(ref, "file:"):
		b, err := os.ReadFile(strings.TrimPrefix(ref, "file:"))
		if err != nil {
			return "", fmt.Errorf("table source DSN %s: %w", ref, err)
		}
		return strings.TrimSpace(string(b)), nil
	case ref == "":
		return "", errors.New("table source: give the application database with --dsn env:NAME or --dsn file:PATH")
	}
	return ref, nil
}
