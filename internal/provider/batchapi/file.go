package batchapi

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
)

// PurposeBatch is the purpose of a batch input file.
const PurposeBatch = "batch"

// File is the Files API's file object.
type File struct {
	// ID identifies the file, such as "file-abc123".
	ID string `json:"id"`
	// Bytes is its size.
	Bytes int64 `json:"bytes"`
	// CreatedAt is when it was uploaded or written, in Unix seconds.
	CreatedAt int64 `json:"created_at"`
	// Filename is the name it was uploaded under.
	Filename string `json:"filename"`
	// Purpose is "batch" for an input file, "batch_output" for the
	// output and error files of a batch.
	Purpose string `json:"purpose"`
}

// UploadFile uploads a batch input file, such as one a Builder wrote,
// streaming it from r (multipart/form-data, purpose=batch). name must end
// in .jsonl. It is bounded by ctx only: a 200 MB file takes its time.
//
// Errors: *APIError for a refusal (400 for a name without .jsonl, 413 for
// a file over the provider's upload limit); otherwise the transport
// error, wrapped.
func (c *Client) UploadFile(ctx context.Context, name string, r io.Reader) (*File, error) {
	op := "upload file " + name
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(writeUpload(mw, name, r))
	}()
	req, err := c.newRequest(ctx, http.MethodPost, "/files", pr)
	if err != nil {
		_ = pr.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.send(req, op)
	_ = pr.Close() // stops the writer if the server answered early
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return decodeObject[File](resp, op)
}

func writeUpload(mw *multipart.Writer, name string, r io.Reader) error {
	if err := mw.WriteField("purpose", PurposeBatch); err != nil {
		return err
	}
	part, err := mw.CreateFormFile("file", name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, r); err != nil {
		return fmt.Errorf("read batch file: %w", err)
	}
	return mw.Close()
}

// File returns a file's object.
//
// Errors: *APIError matching ErrNotFound for an unknown file.
func (c *Client) File(ctx context.Context, id string) (*File, error) {
	var f File
	if err := c.call(ctx, http.MethodGet, "/files/"+url.PathEscape(id), "get file "+id, nil, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// DeleteFile deletes a file.
//
// Errors: *APIError matching ErrNotFound for an unknown file.
func (c *Client) DeleteFile(ctx context.Context, id string) error {
	var out struct {
		Deleted bool `json:"deleted"`
	}
	if err := c.call(ctx, http.MethodDelete, "/files/"+url.PathEscape(id), "delete file "+id, nil, &out); err != nil {
		return err
	}
	if !out.Deleted {
		return fmt.Errorf("delete file %s: the provider answered deleted: false", id)
	}
	return nil
}

// FileContent opens a file's content for reading, such as a batch's
// output or error file for a Reader. The caller closes it. It is bounded
// by ctx only.
//
// Errors: *APIError matching ErrNotFound for an unknown file.
func (c *Client) FileContent(ctx context.Context, id string) (io.ReadCloser, error) {
	op := "get file content " + id
	req, err := c.newRequest(ctx, http.MethodGet, "/files/"+url.PathEscape(id)+"/content", nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	resp, err := c.send(req, op)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// FileListParams page through files.
type FileListParams struct {
	// Purpose keeps the files of one purpose, such as PurposeBatch.
	// Defaults to every purpose.
	Purpose string
	// Limit is the page size, 1 to 10,000. Defaults to the provider's.
	Limit int
	// After is the last id of the previous page. Defaults to the first
	// page.
	After string
}

// FilePage is a page of files, newest first.
type FilePage struct {
	Data    []File `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

// ListFiles returns a page of files, newest first; pass LastID as After
// for the next page while HasMore.
func (c *Client) ListFiles(ctx context.Context, p FileListParams) (*FilePage, error) {
	q := url.Values{}
	if p.Purpose != "" {
		q.Set("purpose", p.Purpose)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	path := "/files"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page FilePage
	if err := c.call(ctx, http.MethodGet, path, "list files", nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllFiles lists every file of purpose (every purpose when empty),
// newest first, page after page.
func (c *Client) AllFiles(ctx context.Context, purpose string) ([]File, error) {
	var all []File
	after := ""
	for {
		page, err := c.ListFiles(ctx, FileListParams{Purpose: purpose, Limit: 1000, After: after})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if !page.HasMore || page.LastID == "" {
			return all, nil
		}
		after = page.LastID
	}
}
