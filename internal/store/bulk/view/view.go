package view

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrUnknownBatch is returned by Show for a batch id the ledger does not
// hold.
var ErrUnknownBatch = errors.New("no such bulk batch")

// DefaultListLimit is how many batches List returns when the filter sets
// no limit.
const DefaultListLimit = 50

// BatchView is one batch as an operator reads it: its ledger row without
// the cursors the poller keeps. Tokens are the members' tokens as the
// ledger counted them; the provider bills half its live price for them.
// Empty ids and nil times are steps the batch has not reached.
type BatchView struct {
	ID              int64  `json:"batch_id"`
	SourceID        string `json:"source_id"`
	Generation      int    `json:"generation"`
	State           State  `json:"state"`
	InputFileID     string `json:"input_file_id"`
	ProviderBatchID string `json:"provider_batch_id"`
	OutputFileID    string `json:"output_file_id"`
	ErrorFileID     string `json:"error_file_id"`
	// Requests, Inputs, Bytes and Tokens are the batch's size against
	// the provider's limits: its request lines, one per distinct text.
	Requests int `json:"requests"`
	// Members counts the chunks admitted to the batch; those that share
	// a text wait on one request line. A chunk that joined a line the
	// batch already held is counted when the batch next moves (its
	// upload, each state the provider reports, its settlement).
	Members int   `json:"members"`
	Inputs  int   `json:"inputs"`
	Bytes   int64 `json:"bytes"`
	Tokens  int64 `json:"tokens"`
	// Stored, Parked and Requeued count the members settled so far.
	Stored            int        `json:"stored"`
	Parked            int        `json:"parked"`
	Requeued          int        `json:"requeued"`
	OpenedAt          time.Time  `json:"opened_at"`
	SealedAt          *time.Time `json:"sealed_at"`
	UploadedAt        *time.Time `json:"uploaded_at"`
	CreatedAt         *time.Time `json:"created_at"`
	FinishedAt        *time.Time `json:"finished_at"`
	SettledAt         *time.Time `json:"settled_at"`
	CancelRequestedAt *time.Time `json:"cancel_requested_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	// LastError is the provider's errors or the last failure to move
	// the batch, empty when none.
	LastError string `json:"last_error"`
	// Outcome is how the batch ended, empty until it settles.
	Outcome Outcome `json:"outcome,omitempty"`
	// ErrorCode and ErrorMessage are the provider's first error for a
	// batch it failed.
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	// Answered counts the members a line of the batch's files answered
	// (stored, parked, or owed again after a retryable error), and
	// Unanswered those it ended without answering, handed back as owed
	// work when it settled.
	Answered   int `json:"answered"`
	Unanswered int `json:"unanswered"`
}

// Ended says how a settled batch ended, for an operator: the outcome
// with the provider's error for a failed batch and the members answered
// for an expired one; empty until the batch settles.
func (v BatchView) Ended() string {
	switch v.Outcome {
	case "":
		return ""
	case OutcomeFailed:
		switch {
		case v.ErrorCode != "" && v.ErrorMessage != "":
			return fmt.Sprintf("failed (%s: %s)", v.ErrorCode, v.ErrorMessage)
		case v.ErrorCode != "":
			return fmt.Sprintf("failed (%s)", v.ErrorCode)
		}
	case OutcomeExpired:
		return fmt.Sprintf("expired (%d answered, %d not)", v.Answered, v.Unanswered)
	case OutcomeOutputLost:
		return "lost output"
	}
	return string(v.Outcome)
}

// viewColumns are BatchView's, in scanView's order.
const viewColumns = `batch_id, source_id, generation, state, coalesce(input_file_id, ''), coalesce(provider_batch_id, ''),
	coalesce(output_file_id, ''), coalesce(error_file_id, ''), requests, inputs, bytes, tokens, stored, parked, requeued,
	opened_at, sealed_at, uploaded_at, created_at, finished_at, settled_at, cancel_requested_at, updated_at, coalesce(last_error, ''),
	members, coalesce(outcome, ''), coalesce(error_code, ''), coalesce(error_message, ''), unanswered`

func scanView(row pgx.CollectableRow) (BatchView, error) {
	var v BatchView
	err := row.Scan(&v.ID, &v.SourceID, &v.Generation, &v.State, &v.InputFileID, &v.ProviderBatchID,
		&v.OutputFileID, &v.ErrorFileID, &v.Requests, &v.Inputs, &v.Bytes, &v.Tokens, &v.Stored, &v.Parked, &v.Requeued,
		&v.OpenedAt, &v.SealedAt, &v.UploadedAt, &v.CreatedAt, &v.FinishedAt, &v.SettledAt, &v.CancelRequestedAt, &v.UpdatedAt, &v.LastError,
		&v.Members, &v.Outcome, &v.ErrorCode, &v.ErrorMessage, &v.Unanswered)
	v.Answered = max(v.Stored+v.Parked+v.Requeued-v.Unanswered, 0)
	v.OpenedAt, v.UpdatedAt = v.OpenedAt.UTC(), v.UpdatedAt.UTC()
	for _, t := range []*time.Time{v.SealedAt, v.UploadedAt, v.CreatedAt, v.FinishedAt, v.SettledAt, v.CancelRequestedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return v, err
}

// ListFilter selects the batches List returns. Empty fields do not
// filter.
type ListFilter struct {
	// Source keeps one source's batches.
	Source string
	// State keeps the batches in one state.
	State State
	// Limit is how many batches, newest first. Defaults to
	// DefaultListLimit.
	Limit int
}

// List returns the batches f selects, newest first. It reads
// bulk_batches only, which every role that watches bulk mode may
// (sluice_console included).
func List(ctx context.Context, q Querier, f ListFilter) ([]BatchView, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	rows, err := q.Query(ctx, `SELECT `+viewColumns+` FROM bulk_batches
		WHERE ($1 = '' OR source_id = $1) AND ($2 = '' OR state = $2)
		ORDER BY batch_id DESC LIMIT $3`, f.Source, f.State, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("bulk: list batches: %w", err)
	}
	views, err := pgx.CollectRows(rows, scanView)
	if err != nil {
		return nil, fmt.Errorf("bulk: list batches: %w", err)
	}
	if views == nil {
		views = []BatchView{}
	}
	return views, nil
}

// MemberCount counts a batch's members in one state with one error class
// (empty for none: every state but parked).
type MemberCount struct {
	State      MemberState `json:"state"`
	ErrorClass string      `json:"error_class"`
	Members    int64       `json:"members"`
}

// Show returns batch id and its members counted by state and error
// class, never reading their text. It returns an error matching
// ErrUnknownBatch for an id the ledger does not hold. Counting members
// needs SELECT on bulk_members (sluice_operator).
func Show(ctx context.Context, q Querier, id int64) (BatchView, []MemberCount, error) {
	rows, err := q.Query(ctx, `SELECT `+viewColumns+` FROM bulk_batches WHERE batch_id = $1`, id)
	if err != nil {
		return BatchView{}, nil, fmt.Errorf("bulk: show batch %d: %w", id, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, scanView)
	if errors.Is(err, pgx.ErrNoRows) {
		return BatchView{}, nil, fmt.Errorf("bulk: batch %d: %w", id, ErrUnknownBatch)
	}
	if err != nil {
		return BatchView{}, nil, fmt.Errorf("bulk: show batch %d: %w", id, err)
	}
	rows, err = q.Query(ctx, `
		SELECT state, coalesce(error_class, ''), count(*) FROM bulk_members
		WHERE batch_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`, id)
	if err != nil {
		return v, nil, fmt.Errorf("bulk: count members of batch %d: %w", id, err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[MemberCount])
	if err != nil {
		return v, nil, fmt.Errorf("bulk: count members of batch %d: %w", id, err)
	}
	if counts == nil {
		counts = []MemberCount{}
	}
	return v, counts, nil
}
