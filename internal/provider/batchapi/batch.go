package batchapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// EndpointEmbeddings is the endpoint of embedding batches.
const EndpointEmbeddings = "/v1/embeddings"

// CompletionWindow is the only completion window the provider offers.
const CompletionWindow = "24h"

// Status is a batch's status.
type Status string

// The statuses of a batch. Failed, Completed, Expired and Cancelled are
// final.
const (
	StatusValidating Status = "validating"
	StatusFailed     Status = "failed"
	StatusInProgress Status = "in_progress"
	StatusFinalizing Status = "finalizing"
	StatusCompleted  Status = "completed"
	StatusExpired    Status = "expired"
	StatusCancelling Status = "cancelling"
	StatusCancelled  Status = "cancelled"
)

// Final reports whether the batch will not change any more. Completed,
// expired and cancelled batches have output and error files to read.
func (s Status) Final() bool {
	switch s {
	case StatusFailed, StatusCompleted, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Batch is the provider's batch object. Times are Unix seconds, zero when
// the batch has not been there.
type Batch struct {
	ID               string `json:"id"`
	Endpoint         string `json:"endpoint"`
	Model            string `json:"model"`
	InputFileID      string `json:"input_file_id"`
	CompletionWindow string `json:"completion_window"`
	Status           Status `json:"status"`
	// OutputFileID holds the lines that succeeded; empty when none did.
	OutputFileID string `json:"output_file_id"`
	// ErrorFileID holds the lines that failed or did not run; empty when
	// there are none.
	ErrorFileID string `json:"error_file_id"`
	// Errors says why a failed batch failed validation.
	Errors        *BatchErrors      `json:"errors"`
	CreatedAt     int64             `json:"created_at"`
	InProgressAt  int64             `json:"in_progress_at"`
	ExpiresAt     int64             `json:"expires_at"`
	FinalizingAt  int64             `json:"finalizing_at"`
	CompletedAt   int64             `json:"completed_at"`
	FailedAt      int64             `json:"failed_at"`
	ExpiredAt     int64             `json:"expired_at"`
	CancellingAt  int64             `json:"cancelling_at"`
	CancelledAt   int64             `json:"cancelled_at"`
	RequestCounts RequestCounts     `json:"request_counts"`
	Metadata      map[string]string `json:"metadata"`
}

// BatchErrors are the validation errors of a failed batch.
type BatchErrors struct {
	Data []BatchError `json:"data"`
}

// BatchError is one validation error: Line is the input file's line
// (from 1), zero when the error is about the whole file or the batch.
type BatchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param"`
	Line    int    `json:"line"`
}

// RequestCounts counts a batch's requests.
type RequestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// CreateParams are the parameters of a new batch.
type CreateParams struct {
	// InputFileID is the uploaded request file. Required.
	InputFileID string
	// Metadata is up to 16 key-value pairs kept with the batch, such as
	// the ledger's id for it. Defaults to none.
	Metadata map[string]string
}

// CreateBatch creates an embeddings batch over an uploaded file, with the
// 24h completion window. The provider validates the file afterwards: a
// bad file, or one past the enqueued-token quota, shows as a batch whose
// status becomes StatusFailed with Errors.
//
// Errors: *APIError for a refusal (400 for an unknown input file or bad
// metadata).
func (c *Client) CreateBatch(ctx context.Context, p CreateParams) (*Batch, error) {
	in := struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata,omitempty"`
	}{p.InputFileID, EndpointEmbeddings, CompletionWindow, p.Metadata}
	var b Batch
	if err := c.call(ctx, http.MethodPost, "/batches", "create batch", in, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// Batch returns a batch as it is now.
//
// Errors: *APIError matching ErrNotFound for a batch the provider does not
// know, or lost.
func (c *Client) Batch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.call(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), "get batch "+id, nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// CancelBatch asks the provider to cancel a batch; it answers with the
// batch cancelling, and later cancelled, its unfinished requests in the
// error file.
//
// Errors: *APIError matching ErrNotFound for an unknown batch; an
// *APIError with status 400 for a batch already final.
func (c *Client) CancelBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.call(ctx, http.MethodPost, "/batches/"+url.PathEscape(id)+"/cancel", "cancel batch "+id, nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ListParams page through batches.
type ListParams struct {
	// Limit is the page size, 1 to 100. Defaults to the provider's (20).
	Limit int
	// After is the last id of the previous page. Defaults to the first
	// page.
	After string
}

// BatchPage is a page of batches, newest first.
type BatchPage struct {
	Data    []Batch `json:"data"`
	FirstID string  `json:"first_id"`
	LastID  string  `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// ListBatches returns a page of batches, newest first; pass LastID as
// After for the next page while HasMore.
func (c *Client) ListBatches(ctx context.Context, p ListParams) (*BatchPage, error) {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	path := "/batches"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page BatchPage
	if err := c.call(ctx, http.MethodGet, path, "list batches", nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// decodeObject decodes a JSON object answer.
func decodeObject[T any](resp *http.Response, op string) (*T, error) {
	var v T
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxObjectBody)).Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: read answer: %w", op, err)
	}
	return &v, nil
}
