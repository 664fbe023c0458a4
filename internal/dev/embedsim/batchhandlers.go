package embedsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Limits of a batch's metadata, as the provider sets them.
const (
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

type createBatchRequest struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
}

func (s *Server) serveCreateBatch(w http.ResponseWriter, r *http.Request) {
	var req createBatchRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, apiError{Message: "We could not parse the JSON body of your request: " + err.Error(), Type: typeInvalidRequest}, 0)
		return
	}
	if aerr := checkCreateBatch(req); aerr != nil {
		writeError(w, http.StatusBadRequest, *aerr, 0)
		return
	}
	if s.batches.refuseCreate() {
		writeError(w, http.StatusBadRequest, apiError{
			Message: fmt.Sprintf("The input file %s could not be accepted for a batch.", req.InputFileID),
			Type:    typeInvalidRequest, Param: "input_file_id", Code: "invalid_file",
		}, 0)
		return
	}
	b, ok := s.batches.create(req.InputFileID, req.Endpoint, req.Metadata, s.now())
	if !ok {
		writeError(w, http.StatusBadRequest, apiError{
			Message: fmt.Sprintf("Invalid 'input_file_id': %q. No such File object.", req.InputFileID),
			Type:    typeInvalidRequest, Param: "input_file_id",
		}, 0)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func checkCreateBatch(req createBatchRequest) *apiError {
	missing := func(param string) *apiError {
		return &apiError{Message: fmt.Sprintf("Missing required parameter: '%s'.", param), Type: typeInvalidRequest, Param: param, Code: "missing_required_parameter"}
	}
	invalid := func(param, value, supported string) *apiError {
		return &apiError{Message: fmt.Sprintf("Invalid value: %q. Supported values are: %s.", value, supported), Type: typeInvalidRequest, Param: param, Code: "invalid_value"}
	}
	switch {
	case req.InputFileID == "":
		return missing("input_file_id")
	case req.Endpoint == "":
		return missing("endpoint")
	case req.CompletionWindow == "":
		return missing("completion_window")
	case req.Endpoint != embeddingsEndpoint:
		return invalid("endpoint", req.Endpoint, "'"+embeddingsEndpoint+"' (the only endpoint embed-sim serves)")
	case req.CompletionWindow != CompletionWindow:
		return invalid("completion_window", req.CompletionWindow, "'24h'")
	case len(req.Metadata) > maxMetadataPairs:
		return &apiError{Message: fmt.Sprintf("Invalid 'metadata': too many properties. Expected an object with at most %d properties, but got an object with %d properties instead.", maxMetadataPairs, len(req.Metadata)), Type: typeInvalidRequest, Param: "metadata", Code: "object_above_max_properties"}
	}
	for k, v := range req.Metadata {
		if utf8.RuneCountInString(k) > maxMetadataKey || utf8.RuneCountInString(v) > maxMetadataValue {
			return &apiError{Message: fmt.Sprintf("Invalid 'metadata': keys are at most %d characters and values at most %d.", maxMetadataKey, maxMetadataValue), Type: typeInvalidRequest, Param: "metadata", Code: "string_above_max_length"}
		}
	}
	return nil
}

func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) {
	b, ok := s.batches.get(r.PathValue("id"), s.now())
	if !ok {
		writeBatchNotFound(w, r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) serveListBatches(w http.ResponseWriter, r *http.Request) {
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Invalid 'limit': %q. Expected a value between 1 and 100.", v), Type: typeInvalidRequest, Param: "limit", Code: "invalid_value"}, 0)
			return
		}
		limit = n
	}
	data, more := s.batches.list(r.URL.Query().Get("after"), limit, s.now())
	page := struct {
		Object  string        `json:"object"`
		Data    []batchObject `json:"data"`
		FirstID *string       `json:"first_id"`
		LastID  *string       `json:"last_id"`
		HasMore bool          `json:"has_more"`
	}{Object: "list", Data: data, HasMore: more}
	if len(data) > 0 {
		page.FirstID, page.LastID = &data[0].ID, &data[len(data)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) serveCancelBatch(w http.ResponseWriter, r *http.Request) {
	b, ok, status := s.batches.cancel(r.PathValue("id"), s.now())
	switch {
	case !ok:
		writeBatchNotFound(w, r.PathValue("id"))
	case status != "":
		writeError(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Cannot cancel a batch with status '%s'.", status), Type: typeInvalidRequest}, 0)
	default:
		writeJSON(w, http.StatusOK, b)
	}
}

func writeBatchNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, apiError{Message: "No such Batch object: " + id, Type: typeInvalidRequest, Param: "id"}, 0)
}

// writeJSON sends v as the JSON body of a status answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// SetBatchFaults replaces the batch faults. They apply to batches created
// from then on; each batch draws its own when created.
func (s *Server) SetBatchFaults(f BatchFaults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("embedsim: %w", err)
	}
	s.batches.mu.Lock()
	defer s.batches.mu.Unlock()
	s.batches.faults = f
	return nil
}

// LoseBatch forgets a batch, as a provider that lost it would: from then
// on it is not found (404) and not listed. Its files stay. It reports
// whether the batch existed.
func (s *Server) LoseBatch(id string) bool { return s.batches.lose(id) }
