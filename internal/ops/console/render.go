package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// page is what every template receives.
type page struct {
	Title string
	P     Principal
	// Nav names the current section, for aria-current.
	Nav string
	// Flash is a one-line message above the content.
	Flash string
	Data  any
}

var pageFiles = []string{"overview.html", "list.html", "letter.html", "replay.html", "replayed.html", "corrected.html",
	"runs.html", "run.html", "document.html", "audit.html", "batches.html", "sources.html", "login.html", "error.html"}

var funcs = template.FuncMap{
	"time": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04:05")
		case *time.Time:
			if v == nil {
				return "–"
			}
			return v.UTC().Format("2006-01-02 15:04:05")
		}
		return ""
	},
	"str": func(s *string) string {
		if s == nil {
			return "–"
		}
		return *s
	},
	"num": func(p *int) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprint(*p)
	},
	"pct":          func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
	"human":        func(s any) string { return strings.ReplaceAll(fmt.Sprint(s), "_", " ") },
	"query":        query,
	"minus":        func(a int64, b int) int64 { return a - int64(b) },
	"dispositions": func() []string { return []string{"retry", "quarantine", "ambiguous", "escalate"} },
}

// query renders v as a query string, "?" included.
func query(v url.Values) template.URL {
	return template.URL("?" + v.Encode())
}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, f := range pageFiles {
		t, err := template.New(f).Funcs(funcs).ParseFS(webFS, "web/layout.html", "web/"+f)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", f, err)
		}
		out[f] = t
	}
	return out, nil
}

// render writes a page; it renders to a buffer first so that a template
// error never sends half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	s.renderTemplate(w, r, status, name, "layout", p)
}

func (s *Server) renderTemplate(w http.ResponseWriter, r *http.Request, status int, name, tmpl string, p page) {
	if p.P.Name == "" {
		p.P = principalOf(r.Context())
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, tmpl, p); err != nil {
		s.cfg.Log.Error().Err(err).Str("template", name).Msg("console render")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page with a message for humans.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error.html", page{Title: http.StatusText(status), Flash: msg})
}

// internal logs err (never a payload: errors here come from queries) and
// answers 500.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Log.Error().Err(err).Str("path", r.URL.Path).Msg("console")
	s.fail(w, r, http.StatusInternalServerError, "Something failed on the server; the log says what.")
}
