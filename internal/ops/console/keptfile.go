package console

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path"
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
}

// inlineImages are the names of the files a browser shows as an image.
var inlineImages = []string{".png", ".jpg", ".jpeg", ".gif", ".webp"}

// readKeptFile returns what dead letter l keeps of its file; nil when it
// keeps none (never kept, or purged with its payload).
func readKeptFile(ctx context.Context, pool *pgxpool.Pool, l *letter) (*keptFile, error) {
	k, ok, err := deadletter.KeptFileOf(ctx, pool, l.ID)
	if err != nil || !ok {
		return nil, err
	}
	ext := strings.ToLower(path.Ext(l.NativeID))
	for _, e := range inlineImages {
		if ext == e {
			return &keptFile{KeptFile: k, Image: true}, nil
		}
	}
	return &keptFile{KeptFile: k}, nil
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
