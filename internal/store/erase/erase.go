package erase

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/store/bulk/erasure"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Request is one delete: documents of one source, by doc id, with who
// asked and why, or the sync run that found them gone.
type Request struct {
	// SourceID is the documents' source; required.
	SourceID string
	// DocIDs are the documents to delete, all of SourceID.
	DocIDs []string
	// By is who asked: "cli:<user>", or "sync:<run id>" for a sync.
	By string
	// Reason is why; required.
	Reason string
	// RunID is the sync run that deletes, empty for an operator's delete.
	RunID string
	// Execute acts; otherwise the request is an audited dry run.
	Execute bool
}

// Errors of Delete that callers branch on.
var (
	// ErrNoReason is a request without a reason.
	ErrNoReason = errors.New("a delete needs a reason: pass --reason, e.g. --reason 'removed at the source, ticket 123'")
	// ErrUnknownDocument is a doc id that is not a document of the source.
	ErrUnknownDocument = errors.New("unknown document")
)

// Deleted is one document a request deleted and what its erasure
// removed.
type Deleted struct {
	DocID    string `json:"doc_id"`
	NativeID string `json:"source_native_id"`
	Version  int64  `json:"version"`
	// Vectors counts the served vectors of every index generation.
	Vectors int `json:"vectors"`
	// TextRows counts rows holding the document's text besides vectors:
	// retained previous-version rows and escalated text.
	TextRows    int `json:"text_rows"`
	Jobs        int `json:"jobs"`
	Payloads    int `json:"payloads"`
	DeadLetters int `json:"dead_letters_resolved"`
}

// Result is what Delete did.
type Result struct {
	RequestID string `json:"request_id"`
	DryRun    bool   `json:"dry_run"`
	// Selected are the documents the request names that are not deleted
	// yet.
	Selected []string `json:"selected"`
	// AlreadyDeleted are those already deleted, left as they are.
	AlreadyDeleted []string  `json:"already_deleted"`
	Deleted        []Deleted `json:"deleted"`
}

// Metrics are the deletes' metrics.
type Metrics struct {
	// Deleted counts documents deleted, by source.
	Deleted *prometheus.CounterVec
}

// NewMetrics registers the deletes' metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_documents_deleted_total",
		Help: "Documents deleted (tombstoned and erased), by source.",
	}, []string{"source"})}
	reg.MustRegister(m.Deleted)
	return m
}

// Eraser runs deletes.
type Eraser struct {
	pool    *pgxpool.Pool
	metrics *Metrics
	now     func() time.Time
}

// New returns an Eraser on pool; metrics may be nil.
func New(pool *pgxpool.Pool, metrics *Metrics) *Eraser {
	return &Eraser{pool: pool, metrics: metrics, now: time.Now}
}

// Delete deletes the request's documents, or, unless r.Execute, records
// an audited dry run saying which it would. Every doc id must be a
// document of r.SourceID (an *UnknownDocumentsError matching
// ErrUnknownDocument otherwise, before anything is written). The deletes, their erasure and the audit commit in one
// transaction: after it, nothing of the documents' text is left in
// PostgreSQL.
func (e *Eraser) Delete(ctx context.Context, r Request) (Result, error) {
	if r.Reason == "" {
		return Result{}, ErrNoReason
	}
	if r.By == "" {
		return Result{}, errors.New("a delete needs who asks for it")
	}
	ids := append([]string(nil), r.DocIDs...)
	sort.Strings(ids)
	res := Result{RequestID: newRequestID(e.now()), DryRun: !r.Execute}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		res.Selected, res.AlreadyDeleted, res.Deleted = nil, nil, nil
		if err := e.check(ctx, tx, r.SourceID, ids, &res); err != nil {
			return err
		}
		if err := insertRequest(ctx, tx, res.RequestID, r, len(res.Selected)); err != nil {
			return err
		}
		if !r.Execute || len(res.Selected) == 0 {
			return nil
		}
		var err error
		res.Deleted, err = eraseTx(ctx, tx, res.RequestID, r.RunID, res.Selected)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if e.metrics != nil && len(res.Deleted) > 0 {
		e.metrics.Deleted.WithLabelValues(r.SourceID).Add(float64(len(res.Deleted)))
	}
	return res, nil
}

// check sorts ids into those to delete and those already deleted, and
// refuses the ids that are not documents of source, naming them all in
// an *UnknownDocumentsError.
func (e *Eraser) check(ctx context.Context, tx pgx.Tx, source string, ids []string, res *Result) error {
	rows, err := tx.Query(ctx, `SELECT doc_id, status FROM documents WHERE doc_id = ANY($1) AND source_id = $2`, ids, source)
	if err != nil {
		return fmt.Errorf("read documents: %w", err)
	}
	status := map[string]string{}
	var id, st string
	if _, err := pgx.ForEachRow(rows, []any{&id, &st}, func() error {
		status[id] = st
		return nil
	}); err != nil {
		return fmt.Errorf("read documents: %w", err)
	}
	var unknown []string
	for _, id := range ids {
		switch s, ok := status[id]; {
		case !ok:
			unknown = append(unknown, id)
		case s == string(manifest.DocDeleted):
			res.AlreadyDeleted = append(res.AlreadyDeleted, id)
		default:
			res.Selected = append(res.Selected, id)
		}
	}
	if len(unknown) > 0 {
		return &UnknownDocumentsError{SourceID: source, DocIDs: unknown}
	}
	return nil
}

// eraseTx records the tombstones of ids and erases everything of them,
// in tx, and records what it erased under request.
func eraseTx(ctx context.Context, tx pgx.Tx, request, runID string, ids []string) ([]Deleted, error) {
	ts, err := manifest.Tombstones(ctx, tx, runID, ids)
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	gone := make([]string, len(ts))
	for i, t := range ts {
		gone[i] = t.DocID
	}
	e, err := erasePieces(ctx, tx, ts, gone)
	if err != nil {
		return nil, err
	}
	out := make([]Deleted, len(ts))
	for i, t := range ts {
		v, l := e.vectors[t.DocID], e.letters[t.DocID]
		out[i] = Deleted{DocID: t.DocID, NativeID: t.NativeID, Version: t.Version, Vectors: v.Vectors + v.Generations,
			TextRows: v.Previous + e.escalated[t.DocID], Jobs: e.jobs[t.DocID], Payloads: l.Payloads, DeadLetters: l.Resolved}
	}
	return out, insertDeletions(ctx, tx, request, ts[0].SourceID, out)
}

// erased is what the owners' erasures removed, by document.
type erased struct {
	jobs, escalated map[string]int
	vectors         map[string]vectorstore.Erased
	letters         map[string]deadletter.Erased
}

// erasePieces erases everything of the tombstoned documents ts (named
// gone) that its tables' owners hold: manifest jobs, escalated text,
// vectors and text, dead-letter payloads.
func erasePieces(ctx context.Context, tx pgx.Tx, ts []manifest.Tombstone, gone []string) (erased, error) {
	var e erased
	var err error
	if e.jobs, err = manifest.EraseChunks(ctx, tx, ts); err != nil {
		return e, err
	}
	if e.escalated, err = manifest.EraseEscalatedText(ctx, tx, gone); err != nil {
		return e, err
	}
	if e.vectors, err = vectorstore.EraseDocuments(ctx, tx, gone); err != nil {
		return e, err
	}
	if err := generation.Erase(ctx, tx, gone); err != nil {
		return e, err
	}
	if _, err := erasure.Members(ctx, tx, gone); err != nil {
		return e, err
	}
	e.letters, err = deadletter.Erase(ctx, tx, gone)
	return e, err
}

// eraseAll is erasePieces when only success matters.
func eraseAll(ctx context.Context, tx pgx.Tx, ts []manifest.Tombstone, gone []string) error {
	_, err := erasePieces(ctx, tx, ts, gone)
	return err
}

// timeNow is the clock of repairs, which take none injected.
var timeNow = time.Now

func newRequestID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "del-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}
