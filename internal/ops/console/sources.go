package console

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/internal/store/sources/view"
)

// sourceRow is one source on the Sources page. A sync's last error can
// quote the application database's or the store's answer: like a dead
// letter's error detail, only operators see it, and ErrorWithheld tells
// a viewer there is one.
type sourceRow struct {
	view.Source
	// Lag is the last sync's lag, rounded for reading; empty for none.
	Lag           string
	ErrorWithheld bool
}

// sourcesPage lists every source, declared or named by documents, with
// its kind, whether a follower keeps it live, its last sync and lag, and
// its documents: what `sluice sources ls` prints.
func (s *Server) sourcesPage(w http.ResponseWriter, r *http.Request) {
	vs, err := view.List(r.Context(), s.pool)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	operator := principalOf(r.Context()).Operator()
	rows := make([]sourceRow, len(vs))
	for i, v := range vs {
		rows[i] = sourceRow{Source: v}
		if v.LagSeconds != nil {
			rows[i].Lag = time.Duration(*v.LagSeconds * float64(time.Second)).Round(time.Millisecond).String()
		}
		if !operator && v.LastError != "" {
			rows[i].LastError, rows[i].ErrorWithheld = "", true
		}
	}
	s.render(w, r, http.StatusOK, "sources.html", page{Title: "Sources", Nav: "sources", Data: rows})
}
