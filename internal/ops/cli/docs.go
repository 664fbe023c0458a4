package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/pkg/messages"
)

func docsCommands() map[string]command {
	return map[string]command{
		"delete": {"delete documents: delete --source S (--id ID ... | --ids-file F) --reason R [--execute] (a dry run without --execute)", runDocsDelete},
		"show":   {"show one document: its version, status, deletes and what is left of its data: show DOC_ID", runDocsShow},
		"ls":     {"list a source's documents: ls --source S [--deleted]", runDocsList},
	}
}

func runDocs(ctx context.Context, env Env, args []string) error {
	return subcommand(ctx, env, "docs", docsCommands(), args)
}

// docsListLimit bounds sluice docs ls.
const docsListLimit = 1000

func runDocsDelete(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "docs delete", &c, false)
	var source, idsFile, reason string
	var execute bool
	var natives []string
	l.String(&source, "source", "", "", "the documents' source (required)")
	l.FlagSet().Func("id", "a document's id within its source (its source native id, or its doc id); repeat for several", func(v string) error {
		natives = append(natives, v)
		return nil
	})
	l.String(&idsFile, "ids-file", "", "", "a file of ids, one a line, as --id takes them")
	l.String(&reason, "reason", "", "", "why the documents are deleted (required; recorded in the audit)")
	l.Bool(&execute, "execute", "", false, "delete; without it the command is an audited dry run")
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usageErr("docs delete takes no arguments, got %q: name documents with --id or --ids-file", rest)
	case source == "":
		return usageErr("docs delete needs --source: the documents' source")
	case reason == "":
		return usageErr("docs delete needs --reason: say why, for the audit trail (e.g. --reason 'removed at the source, ticket 123')")
	}
	if idsFile != "" {
		more, err := readIDs(idsFile)
		if err != nil {
			return err
		}
		natives = append(natives, more...)
	}
	if len(natives) == 0 {
		return usageErr("docs delete needs --id ID (repeatable) or --ids-file F")
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	typed := typedIDs{}
	ids := make([]string, len(natives))
	for i, n := range natives {
		ids[i] = docIDOf(source, n)
		typed[ids[i]] = n
	}
	res, err := erase.New(pool, nil).Delete(ctx, erase.Request{SourceID: source, DocIDs: ids, By: cliPrincipal(env), Reason: reason, Execute: execute})
	if unknown := (*erase.UnknownDocumentsError)(nil); errors.As(err, &unknown) {
		return fmt.Errorf("%s %s: source %q has no such %s; nothing was deleted (sluice docs ls --source %s lists its documents)",
			erase.ErrUnknownDocument, typed.list(unknown.DocIDs), source, noun(len(unknown.DocIDs), "document", "documents"), source)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, res)
	}
	return printDelete(env, res, typed)
}

// typedIDs maps the doc ids of a delete to the ids as the operator typed
// them, so that messages echo what the operator wrote.
type typedIDs map[string]string

// name is docID as typed, with the doc id beside it when they differ.
func (t typedIDs) name(docID string) string {
	if n, ok := t[docID]; ok && n != docID {
		return fmt.Sprintf("%q (%s)", n, docID)
	}
	return docID
}

// list is the ids as typed, quoted and comma-separated.
func (t typedIDs) list(docIDs []string) string {
	q := make([]string, len(docIDs))
	for i, id := range docIDs {
		n, ok := t[id]
		if !ok {
			n = id
		}
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// docIDOf is the doc id an operator means by id: a doc id ("d_" and 32
// hex characters) as it is, otherwise the doc id of source's native id.
func docIDOf(source, id string) string {
	if docIDPattern.MatchString(id) {
		return id
	}
	return messages.DocID(source, id)
}

var docIDPattern = regexp.MustCompile(`^d_[0-9a-f]{32}$`)

func readIDs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("--ids-file: %v", err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read --ids-file %s: %w", path, err)
	}
	return ids, nil
}

func printDelete(env Env, r erase.Result, typed typedIDs) error {
	w := env.Stdout
	if r.DryRun {
		fmt.Fprintf(w, "DRY RUN %s: nothing was deleted; add --execute to delete %s.\n", r.RequestID, plural(len(r.Selected), "document", "documents"))
		for _, id := range r.Selected {
			fmt.Fprintf(w, "  would delete %s\n", typed.name(id))
		}
	} else {
		fmt.Fprintf(w, "deleted %s (request %s)\n", plural(len(r.Deleted), "document", "documents"), r.RequestID)
		for _, d := range r.Deleted {
			fmt.Fprintf(w, "  %s version %d: erased %s, %s, %s, %s; %s resolved\n",
				typed.name(d.DocID), d.Version, plural(d.Vectors, "vector", "vectors"), plural(d.TextRows, "text row", "text rows"),
				plural(d.Jobs, "job", "jobs"), plural(d.Payloads, "payload", "payloads"), plural(d.DeadLetters, "dead letter", "dead letters"))
		}
	}
	for _, id := range r.AlreadyDeleted {
		fmt.Fprintf(w, "  already deleted: %s\n", typed.name(id))
	}
	return nil
}

func runDocsShow(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "docs show", &c, false)
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return usageErr("docs show takes one doc id, got %q", rest)
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	d, err := erase.Show(ctx, pool, rest[0])
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, d)
	}
	w := env.Stdout
	fmt.Fprintf(w, "%s (source %s, native id %s)\n  version %d, status %s, updated %s\n", d.DocID, d.SourceID, d.NativeID,
		d.Version, d.Status, d.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	if s := d.Serving(); s != "" {
		fmt.Fprintf(w, "  %s\n", s)
	}
	for _, x := range d.Deletes {
		by := x.By
		if x.RunID != "" {
			by += " (run " + x.RunID + ")"
		}
		fmt.Fprintf(w, "  deleted at version %d on %s by %s: %s\n    erased %d vectors, %d text rows, %d jobs, %d payloads; %d dead letters resolved\n",
			x.Version, x.DeletedAt.UTC().Format("2006-01-02T15:04:05Z"), by, x.Reason, x.Vectors, x.TextRows, x.Jobs, x.Payloads, x.DeadLetters)
	}
	fmt.Fprintf(w, "  now: %d vectors, %d text rows, %d payloads\n", d.Left.Vectors, d.Left.TextRows, d.Left.Payloads)
	return nil
}

func runDocsList(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "docs ls", &c, false)
	var source string
	var deleted bool
	l.String(&source, "source", "", "", "the source whose documents to list (required)")
	l.Bool(&deleted, "deleted", "", false, "list the deleted documents instead")
	if _, err := parseInterspersed(l, args); err != nil {
		return err
	}
	if source == "" {
		return usageErr("docs ls needs --source")
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	ls, err := erase.List(ctx, pool, source, deleted, docsListLimit)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, ls)
	}
	for _, d := range ls {
		at := d.UpdatedAt
		if d.DeletedAt != nil {
			at = *d.DeletedAt
		}
		fmt.Fprintf(env.Stdout, "%s\t%s\tversion %d\t%s\t%s\n", d.DocID, d.NativeID, d.Version, d.Status, at.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return nil
}
