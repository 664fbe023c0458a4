package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
)

// status is the system's state as the database tells it.
type status struct {
	Documents, Ready, Failed, Empty       int
	Chunks, Stored, Parked, Pending       int
	OutboxUnpublished, DeadLetters        int
	UnresolvedDead, OwedReplays, Resolved int
	Escalations                           int
	ParkedByClass                         map[string]int
}

func readStatus(ctx context.Context, pool *pgxpool.Pool) (status, error) {
	var st status
	err := pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM documents),
		       (SELECT count(*) FROM documents WHERE status = $1),
		       (SELECT count(*) FROM documents WHERE status = $2),
		       (SELECT count(*) FROM documents WHERE status = $3),
		       (SELECT count(*) FROM ingest_manifest WHERE status <> $4),
		       (SELECT count(*) FROM ingest_manifest WHERE status = $5),
		       (SELECT count(*) FROM ingest_manifest WHERE status = $6),
		       (SELECT count(*) FROM ingest_manifest WHERE status = $7),
		       (SELECT count(*) FROM outbox WHERE published_at IS NULL),
		       (SELECT count(*) FROM dead_letters),
		       (SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL),
		       (SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL AND `+deadletter.ReplayableSQL()+`),
		       (SELECT count(*) FROM dead_letters WHERE resolved_at IS NOT NULL),
		       (SELECT count(*) FROM dead_letters WHERE disposition = 'escalate')`,
		manifest.DocReady, manifest.DocFailed, manifest.DocEmpty,
		manifest.Superseded, manifest.Stored, manifest.Parked, manifest.Pending).
		Scan(&st.Documents, &st.Ready, &st.Failed, &st.Empty, &st.Chunks, &st.Stored, &st.Parked, &st.Pending,
			&st.OutboxUnpublished, &st.DeadLetters, &st.UnresolvedDead, &st.OwedReplays, &st.Resolved, &st.Escalations)
	if err != nil {
		return st, fmt.Errorf("read status: %w", err)
	}
	rows, err := pool.Query(ctx, `SELECT last_error_class, count(*) FROM ingest_manifest WHERE status = $1 GROUP BY 1`, manifest.Parked)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	st.ParkedByClass = map[string]int{}
	for rows.Next() {
		var class string
		var n int
		if err := rows.Scan(&class, &n); err != nil {
			return st, err
		}
		st.ParkedByClass[class] = n
	}
	return st, rows.Err()
}

// converged: nothing pending, every dead letter published and triaged,
// and every recoverable one replayed.
func (st status) converged() bool {
	return st.Chunks > 0 && st.Pending == 0 && st.OutboxUnpublished == 0 && st.OwedReplays == 0 && st.UnresolvedDead == st.Parked
}

// converge polls until the system converges, drawing progress.
func (s *stack) converge(ctx context.Context, pool *pgxpool.Pool) (status, error) {
	deadline := time.Now().Add(s.o.Timeout)
	lastLog := time.Time{}
	for {
		st, err := readStatus(ctx, pool)
		if err != nil {
			return st, err
		}
		line := fmt.Sprintf("chunks %d · stored %d · parked %d · pending %d · dead letters %d (awaiting replay %d)",
			st.Chunks, st.Stored, st.Parked, st.Pending, st.DeadLetters, st.OwedReplays)
		if s.o.Progress {
			fmt.Fprintf(s.o.Stderr, "\r\033[K%s", line)
		} else if time.Since(lastLog) > 3*time.Second {
			fmt.Fprintln(s.o.Stderr, line)
			lastLog = time.Now()
		}
		if st.converged() {
			if s.o.Progress {
				fmt.Fprintln(s.o.Stderr)
			}
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("not converged after %s: %s (logs in %s)", s.o.Timeout, line, s.dir)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// KeyedFile is the file the report's keying commands save the low scan's
// recognised text in, for the person who keys it to correct.
const KeyedFile = "keyed.txt"

// scanQuery is the search the demo finds the clean scan by: a sentence
// only OCR could read.
const scanQuery = scantest.Sentence2

// scanned is what became of the scans, as PostgreSQL and a search tell
// it.
type scanned struct {
	// Clean is the clean scan's document status ("" when it has none);
	// Rank the rank at which a search for scanQuery finds it, 0 when it
	// does not.
	Clean string
	Rank  int
	// Low is the class of the low scan's open dead letter ("" when it has
	// none), LowID its id, and Recognised the text OCR recognised in the
	// scan, which the dead letter keeps for keying.
	Low, LowID, Recognised string
}

// readScans reads what became of the scans, and searches for the clean
// one's text through the sluice CLI.
func (s *stack) readScans(ctx context.Context, pool *pgxpool.Pool) (scanned, error) {
	var sc scanned
	var err error
	if sc.Clean, _, _, err = docOutcome(ctx, pool, ScanSource, CleanScan); err != nil {
		return sc, err
	}
	if _, sc.Low, sc.LowID, err = docOutcome(ctx, pool, ScanSource, LowScan); err != nil {
		return sc, err
	}
	hits, err := s.search(scanQuery)
	if err != nil {
		return sc, err
	}
	for _, h := range hits {
		if h.SourceID == ScanSource && h.SourceNativeID == CleanScan {
			sc.Rank = h.Rank
			break
		}
	}
	if sc.LowID == "" {
		return sc, nil
	}
	sc.Recognised, err = deadletter.ReadRecognised(ctx, pool, sc.LowID)
	if errors.Is(err, deadletter.ErrNoRecognisedText) {
		return sc, nil
	}
	return sc, err
}

// hit is a search hit, as sluice search --json prints it.
type hit struct {
	Rank           int    `json:"rank"`
	SourceID       string `json:"source_id"`
	SourceNativeID string `json:"source_native_id"`
}

// search searches for query through the sluice CLI.
func (s *stack) search(query string) ([]hit, error) {
	var res struct {
		Hits []hit `json:"hits"`
	}
	err := s.sluiceJSON(&res, "search", query)
	return res.Hits, err
}

// docOutcome reads the status of the document of source's nativeID, and
// the class and id of its open dead letter; each is "" when there is
// none.
func docOutcome(ctx context.Context, pool *pgxpool.Pool, source, nativeID string) (docStatus, class, id string, err error) {
	err = pool.QueryRow(ctx, `
		SELECT d.status, coalesce(dl.error_class, ''), coalesce(dl.dead_letter_id, '')
		FROM documents d LEFT JOIN dead_letters dl ON dl.doc_id = d.doc_id AND dl.resolved_at IS NULL
		WHERE d.source_id = $1 AND d.source_native_id = $2`, source, nativeID).Scan(&docStatus, &class, &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", "", nil
	}
	if err != nil {
		return "", "", "", fmt.Errorf("read the outcome of %s/%s: %w", source, nativeID, err)
	}
	return docStatus, class, id, nil
}

// check says how the scans' outcome differs from what Poison expects.
func (sc scanned) check() error {
	var errs []error
	if sc.Clean != string(manifest.DocReady) || sc.Rank == 0 {
		errs = append(errs, fmt.Errorf("%s/%s: document %q, rank %d in a search for %q; want it ready (stored) and found",
			ScanSource, CleanScan, sc.Clean, sc.Rank, scanQuery))
	}
	if sc.Low != classify.ClassOCRLowConfidence || sc.Recognised == "" {
		errs = append(errs, fmt.Errorf("%s/%s: open dead letter of class %q keeping %d bytes of recognised text; want it parked as %s with what OCR recognised",
			ScanSource, LowScan, sc.Low, len(sc.Recognised), classify.ClassOCRLowConfidence))
	}
	return errors.Join(errs...)
}

// write prints the scans' lines of the report.
func (sc scanned) write(w io.Writer) {
	found := "not found"
	if sc.Rank > 0 {
		found = fmt.Sprintf("found at rank %d", sc.Rank)
	}
	fmt.Fprintf(w, "  scans         %s/%s: document %s, %s by a search for %q\n", ScanSource, CleanScan, cmp.Or(sc.Clean, "missing"), found, scanQuery)
	parked := "no open dead letter"
	if sc.Low != "" {
		parked = "parked as " + sc.Low
	}
	fmt.Fprintf(w, "                %s/%s: %s, %d bytes of recognised text kept for keying\n", ScanSource, LowScan, parked, len(sc.Recognised))
}

func writeReport(w io.Writer, st status, sy synced, rep *reconcile.Report, sc scanned, fi filed, took time.Duration, s *stack) {
	classes := make([]string, 0, len(st.ParkedByClass))
	for c, n := range st.ParkedByClass {
		classes = append(classes, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(classes)
	fmt.Fprintf(w, "\nSluice demo — converged in %s\n", took.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  documents     %d (ready %d, failed %d, empty %d)\n", st.Documents, st.Ready, st.Failed, st.Empty)
	fmt.Fprintf(w, "  chunks        %d\n", st.Chunks)
	fmt.Fprintf(w, "  stored        %d\n", st.Stored)
	fmt.Fprintf(w, "  parked        %d (%s)\n", st.Parked, strings.Join(classes, ", "))
	fmt.Fprintf(w, "  replayed      %d (parked by the outage, then stored by the replayer)\n", st.Resolved)
	fmt.Fprintf(w, "  escalations   %d\n", st.Escalations)
	fi.write(w)
	sc.write(w)
	fmt.Fprintf(w, "  deleted       %d (removed at the source, then a sync run): %d vectors, %d text rows, %d payloads left\n",
		sy.Deleted, sy.Left.Vectors, sy.Left.TextRows, sy.Left.Payloads)
	fmt.Fprintf(w, "  reconcile     %d leaked, %d duplicated, %d unpublished, %d lost, %d stranded\n",
		rep.Leaked.Total(), rep.Duplicated, rep.Unpublished, rep.Lost, rep.Stranded)
	fmt.Fprintf(w, "  throughput    %.0f chunks/s end to end, outage included\n", float64(st.Chunks)/took.Seconds())
	fmt.Fprintln(w, "\nPoison documents, document files and scans:")
	names := make([]string, 0, len(Poison))
	for n := range Poison {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-28s %s\n", n, Poison[n])
	}
	writeExplore(w, sc, s)
}

// writeExplore prints the commands to run against the system the demo
// keeps, the keying of the low scan's text among them.
func writeExplore(w io.Writer, sc scanned, s *stack) {
	cli := runnable(filepath.Join(s.o.BinDir, "sluice"))
	db, nats := s.operatorURL(), s.nats.URLFor(natsauth.Operator)
	fmt.Fprintf(w, "\nExplore next (with --keep, against the running system):\n")
	fmt.Fprintf(w, "  %s dlq report --database-url '%s'\n", cli, db)
	fmt.Fprintf(w, "  %s index ls --database-url '%s'\n", cli, db)
	fmt.Fprintf(w, "  %s search \"who regulates the spring meltwater\" --database-url '%s' --embedder-url %s\n", cli, db, s.simURL)
	fmt.Fprintf(w, "  %s reconcile --database-url '%s' --nats-url '%s'\n", cli, db, nats)
	if sc.LowID == "" {
		return
	}
	fmt.Fprintf(w, "  key in the text of %s/%s: save what OCR recognised, correct it against the image (%s), store it:\n",
		ScanSource, LowScan, filepath.Join(s.dir, ScanSource, LowScan))
	fmt.Fprintf(w, "    %s dlq show %s --ocr-text --database-url '%s' > %s\n", cli, sc.LowID, db, KeyedFile)
	fmt.Fprintf(w, "    %s dlq correct --id %s --text %s --reason \"keyed from the scan\" --execute --database-url '%s' --nats-url '%s'\n",
		cli, sc.LowID, KeyedFile, db, nats)
	fmt.Fprintf(w, "  or store what OCR recognised as it is, below the bar:\n")
	fmt.Fprintf(w, "    %s dlq replay --id %s --accept-ocr --reason \"accepted as recognised\" --execute --database-url '%s' --nats-url '%s'\n",
		cli, sc.LowID, db, nats)
}

// runnable is how a user in this process's working directory runs the
// executable at path: its name when PATH finds that very file, else its
// path from the working directory when it is below it (bin/sluice), else
// its absolute path.
func runnable(path string) string {
	name := filepath.Base(path)
	if found, err := exec.LookPath(name); err == nil && sameFile(found, path) {
		return name
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.ContainsRune(rel, filepath.Separator) {
				rel = "." + string(filepath.Separator) + rel
			}
			return rel
		}
	}
	return abs
}

// sameFile reports whether a and b name the same file.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// writeMigration prints the model change's section of the report.
func writeMigration(w io.Writer, m *migration) {
	fmt.Fprintf(w, "\nModel change — generation %d, %s at %d dims, ready in %s\n", m.Generation, m.Model, m.Dims, m.Took.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  backfilled    %d chunks by the running consumers (%d queued by the scan over %d passes)\n", m.Backfilled, m.Planned, m.Passes)
	fmt.Fprintf(w, "  provider      %.0f inputs, %.0f tokens for generation %d; %.0f chunks reused\n", m.Inputs, m.Tokens, m.Generation, m.Reused)
	index := "none (no pgvector: searches scan its rows)"
	if m.Indexed {
		index = "HNSW, built before activating"
	}
	fmt.Fprintf(w, "  index         %s\n", index)
	fmt.Fprintf(w, "  compare 1 %d   overlap@10 %.2f, MRR %.2f over %d queries from the corpus\n", m.Generation, m.Overlap, m.MRR, m.Queries)
	fmt.Fprintf(w, "  activated     search served generation %d\n", m.Served)
	fmt.Fprintf(w, "  rolled back   search served generation %d\n", m.RolledBack)
	fmt.Fprintf(w, "  dropped       generation %d, %d vectors: new documents are embedded once, by generation %d\n", m.Generation, m.Dropped, m.RolledBack)
	r := m.Reconcile
	result := "OK"
	if !r.OK {
		result = "NOT OK"
	}
	fmt.Fprintf(w, "  reconcile     %s: %d leaked, %d duplicated, %d unpublished, %d lost, %d stranded, %d generations nothing carries\n",
		result, r.Leaked.Total(), r.Duplicated, r.Unpublished, r.Lost, r.Stranded, len(r.BackfillStranded))
}
