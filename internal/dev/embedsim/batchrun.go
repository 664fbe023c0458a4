package embedsim

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/sluicehq/sluice/pkg/messages"
)

// embeddingsEndpoint is the one endpoint the simulator's batches serve.
const embeddingsEndpoint = "/v1/embeddings"

// runLines answers every line as the live endpoint would answer the same
// body, rules for context length, token caps and poison included.
func (s *Server) runLines(lines []batchLine) {
	rb := responsePool.Get().(*responseBuf)
	defer responsePool.Put(rb)
	for i := range lines {
		l := &lines[i]
		l.status, l.response, l.tokens = s.embedBody(rb, l.body)
	}
}

// embedBody answers one embeddings request body: the status, the body of
// the answer, and the input tokens it used. It shares every rule with the
// live endpoint but the request-level faults (sequences, rates, outages,
// latency), which are about a connection a batch line does not have.
func (s *Server) embedBody(rb *responseBuf, body []byte) (int, []byte, int) {
	req, inputs, aerr := s.decodeRequest(body)
	if aerr != nil {
		return errorBody(*aerr)
	}
	used, aerr := s.countTokens(req.Model, inputs)
	if aerr != nil {
		return errorBody(*aerr)
	}
	poison, _, aerr := inputFaults(s.faults.Load(), req.Model, inputs)
	if aerr != nil {
		return errorBody(*aerr)
	}
	dims := req.Dimensions
	if dims == 0 {
		dims = s.cfg.Dims
	}
	out := rb.appendEmbeddings(nil, req.Model, inputs, used, dims, req.EncodingFormat == "base64", poison)
	return http.StatusOK, out, used
}

// errorBody is the answer to a refused request, as the live endpoint
// gives it; such a request uses no tokens.
func errorBody(e apiError) (int, []byte, int) {
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{e})
	return http.StatusBadRequest, body, 0
}

// writeResults renders the output and error files of an ended batch, in
// the given order of lines: a line that ran goes to the output file if it
// succeeded and to the error file if not; a line that did not run goes to
// the error file with code and message.
func (s *Server) writeResults(b *simBatch, order []int, code, message string, newID func(string, int) string) (out, errs []byte) {
	for _, i := range order {
		l := b.lines[i]
		var line []byte
		line = append(line, `{"id":`...)
		line = messages.AppendJSONString(line, newID("batch_req_", 24))
		line = append(line, `,"custom_id":`...)
		line = messages.AppendJSONString(line, l.customID)
		if i >= b.finished {
			line = append(line, `,"response":null,"error":{"code":`...)
			line = messages.AppendJSONString(line, code)
			line = append(line, `,"message":`...)
			line = messages.AppendJSONString(line, message)
			errs = append(append(errs, line...), "}}\n"...)
			continue
		}
		line = append(line, `,"response":{"status_code":`...)
		line = strconv.AppendInt(line, int64(l.status), 10)
		line = append(line, `,"request_id":`...)
		line = messages.AppendJSONString(line, newID("", 32))
		line = append(line, `,"body":`...)
		line = append(line, l.response...)
		line = append(line, "},\"error\":null}\n"...)
		if l.status == http.StatusOK {
			out = append(out, line...)
		} else {
			errs = append(errs, line...)
		}
	}
	return out, errs
}
