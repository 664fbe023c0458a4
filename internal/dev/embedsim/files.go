package embedsim

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// File purposes the Files API knows. Input files of batches are "batch";
// the files a batch writes are "batch_output".
const (
	purposeBatch       = "batch"
	purposeBatchOutput = "batch_output"
)

// knownPurposes are the purposes an upload may name; only batch files are
// used by the simulator.
var knownPurposes = map[string]bool{
	purposeBatch: true, "fine-tune": true, "assistants": true, "vision": true, "user_data": true, "evals": true,
}

// storedFile is one file of the Files API.
type storedFile struct {
	id        string
	seq       int // order of creation, shared with batches
	filename  string
	purpose   string
	createdAt time.Time
	data      []byte
}

// fileObject is the Files API's file object.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int     `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

func (f *storedFile) object() fileObject {
	return fileObject{
		ID: f.id, Object: "file", Bytes: len(f.data), CreatedAt: f.createdAt.Unix(),
		Filename: f.filename, Purpose: f.purpose, Status: "processed",
	}
}

// uploadOverhead is room for the multipart envelope around a file of the
// largest size.
const uploadOverhead = 64 << 10

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.Batch.MaxUploadBytes+uploadOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, apiError{Message: "The request must be multipart/form-data with the fields 'purpose' and 'file'.", Type: typeInvalidRequest}, 0)
		return
	}
	var purpose, filename string
	var data []byte
	sawFile := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.uploadReadError(w, err)
			return
		}
		switch part.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(part, 64))
			if err != nil {
				s.uploadReadError(w, err)
				return
			}
			purpose = strings.TrimSpace(string(b))
		case "file":
			sawFile, filename = true, part.FileName()
			if data, err = io.ReadAll(part); err != nil {
				s.uploadReadError(w, err)
				return
			}
		}
	}
	if aerr := checkUpload(purpose, filename, sawFile); aerr != nil {
		writeError(w, http.StatusBadRequest, *aerr, 0)
		return
	}
	if int64(len(data)) > s.cfg.Batch.MaxUploadBytes {
		s.uploadReadError(w, &http.MaxBytesError{Limit: s.cfg.Batch.MaxUploadBytes})
		return
	}
	f := s.batches.addFile(filename, purpose, data, s.now())
	writeJSON(w, http.StatusOK, f.object())
}

func checkUpload(purpose, filename string, sawFile bool) *apiError {
	switch {
	case purpose == "":
		return &apiError{Message: "Missing required parameter: 'purpose'.", Type: typeInvalidRequest, Param: "purpose", Code: "missing_required_parameter"}
	case !knownPurposes[purpose]:
		return &apiError{Message: fmt.Sprintf("Invalid value for 'purpose': %q.", purpose), Type: typeInvalidRequest, Param: "purpose", Code: "invalid_value"}
	case !sawFile:
		return &apiError{Message: "Missing required parameter: 'file'.", Type: typeInvalidRequest, Param: "file", Code: "missing_required_parameter"}
	case purpose == purposeBatch && !strings.HasSuffix(filename, ".jsonl"):
		return &apiError{Message: "Invalid file format for Batch API. Must be .jsonl", Type: typeInvalidRequest}
	}
	return nil
}

func (s *Server) uploadReadError(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, apiError{
			Message: fmt.Sprintf("The file is over the limit of %d bytes.", s.cfg.Batch.MaxUploadBytes),
			Type:    typeInvalidRequest, Param: "file",
		}, 0)
		return
	}
	writeError(w, http.StatusBadRequest, apiError{Message: "could not read the upload: " + err.Error(), Type: typeInvalidRequest}, 0)
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	f, ok := s.batches.file(r.PathValue("id"), s.now())
	if !ok {
		writeFileNotFound(w, r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, f.object())
}

func (s *Server) serveFileContent(w http.ResponseWriter, r *http.Request) {
	f, ok := s.batches.file(r.PathValue("id"), s.now())
	if !ok {
		writeFileNotFound(w, r.PathValue("id"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.data)
}

func (s *Server) serveDeleteFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.batches.deleteFile(id) {
		writeFileNotFound(w, id)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "file", true})
}

func writeFileNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, apiError{Message: "No such File object: " + id, Type: typeInvalidRequest, Param: "id"}, 0)
}

// serveListFiles lists files newest first, as the Files API does:
// purpose filters, limit (1 to 10,000, default 10,000) and after page.
func (s *Server) serveListFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 10000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Invalid 'limit': %q. Expected a value between 1 and 10000.", v), Type: typeInvalidRequest, Param: "limit", Code: "invalid_value"}, 0)
			return
		}
		limit = n
	}
	data, more := s.batches.listFiles(q.Get("purpose"), q.Get("after"), limit)
	page := struct {
		Object  string       `json:"object"`
		Data    []fileObject `json:"data"`
		FirstID *string      `json:"first_id"`
		LastID  *string      `json:"last_id"`
		HasMore bool         `json:"has_more"`
	}{Object: "list", Data: data, HasMore: more}
	if len(data) > 0 {
		page.FirstID, page.LastID = &data[0].ID, &data[len(data)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}
