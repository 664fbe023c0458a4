package console

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// keptFile is what the dead-letter page shows of the file a dead letter
// keeps: to an operator, its size and a link to it, and the file itself
// when a browser shows it as an image.
type keptFile struct {
	deadletter.KeptFile
	// Image is set when the page shows the file inline.
	Image bool
	// Recognised is, for an operator, the text OCR recognised in a scan
	// parked below its bar, which the page offers to edit beside the
	// page image; empty when none is kept, and for a viewer.
	Recognised string
}

// inlineImages are the names of the files a browser shows as an image.
var inlineImages = []string{".png", ".jpg", ".jpeg", ".gif", ".webp"}

// readKeptFile returns what dead letter l keeps of its file, with the
// text OCR recognised in it when operator; nil when it keeps none
// (never kept, or purged with its payload).
func readKeptFile(ctx context.Context, pool *pgxpool.Pool, l *letter, operator bool) (*keptFile, error) {
	k, ok, err := deadletter.KeptFileOf(ctx, pool, l.ID)
	if err != nil || !ok {
		return nil, err
	}
	kept := &keptFile{KeptFile: k, Image: slices.Contains(inlineImages, strings.ToLower(path.Ext(l.NativeID)))}
	if operator && k.RecognisedBytes > 0 {
		kept.Recognised, err = deadletter.ReadRecognised(ctx, pool, l.ID)
		if errors.Is(err, deadletter.ErrNoRecognisedText) {
			err = nil // purged since the size was read
		}
	}
	return kept, err
}

// keyedTextBody gives an operator back the text they keyed in on a
// scan's dead-letter page, edited from what OCR recognised, as a file to
// store with sluice dlq correct --text: the console's role reads dead
// letters and corrects chunks, but does not write documents, so the
// document itself is stored by the CLI, under the operator's own role.
func (s *Server) keyedTextBody(w http.ResponseWriter, r *http.Request) {
	text := strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n")
	if strings.TrimSpace(text) == "" {
		s.fail(w, r, http.StatusBadRequest, "Give the text: correct what OCR recognised against the page, then download it.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+keyedFileName(r.PathValue("id"))+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, text)
}

// keyedFileName is the name of the file keyedTextBody serves for dead
// letter id: its letters, digits and dashes only.
func keyedFileName(id string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, id)
	return "keyed-" + safe + ".txt"
}

// keptFileBody serves an operator the bytes a dead letter keeps of its
// file: an image or a PDF shown in the browser, anything else as a
// download. The file is the sender's, not the console's: it is served
// sandboxed, never sniffed, and never cached.
func (s *Server) keptFileBody(w http.ResponseWriter, r *http.Request) {
	if !principalOf(r.Context()).Operator() {
		s.fail(w, r, http.StatusForbidden, "Kept files are for operators.")
		return
	}
	data, _, err := deadletter.KeptBytes(r.Context(), s.pool, r.PathValue("id"))
	if errors.Is(err, deadletter.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "This dead letter keeps no file: it was not kept, or retention purged it with the payload.")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	ct, disposition := keptFileType(data), "inline"
	if ct == "application/octet-stream" {
		disposition = "attachment"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}

// keptFileType is the media type a kept file is served as: an image or
// a PDF by its content, anything else application/octet-stream.
func keptFileType(data []byte) string {
	if bytes.HasPrefix(data, []byte("II*\x00")) || bytes.HasPrefix(data, []byte("MM\x00*")) {
		return "image/tiff"
	}
	switch ct := http.DetectContentType(data); ct {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf":
		return ct
	}
	return "application/octet-stream"
}
