package console

import (
	"net/http"
	"slices"

	"github.com/sluicehq/sluice/internal/store/bulk/view"
)

// batchesPageSize is how many bulk batches the Batches page shows.
const batchesPageSize = 200

// batchRow is one bulk batch on the Batches page, with how it ended. A
// batch's last error and error message are the provider's, which can
// quote the request: like a dead letter's error detail, only operators
// see them (a viewer sees the error code), and ErrorWithheld tells a
// viewer there is one.
type batchRow struct {
	view.BatchView
	ErrorWithheld bool
}

// batchesData is the Batches page's content.
type batchesData struct {
	Source string
	State  view.State
	States []view.State
	Rows   []batchRow
}

// batchesPage lists bulk mode's batches, newest first, by source and
// state. It reads bulk_batches only, which is all the console's role may
// read of the bulk ledger: members and their text stay out of reach.
func (s *Server) batchesPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := view.ListFilter{Source: q.Get("source"), State: view.State(q.Get("state")), Limit: batchesPageSize}
	if f.State != "" && !slices.Contains(view.States, f.State) {
		s.fail(w, r, http.StatusBadRequest, "Filter: no such batch state.")
		return
	}
	vs, err := view.List(r.Context(), s.pool, f)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	operator := principalOf(r.Context()).Operator()
	d := batchesData{Source: f.Source, State: f.State, States: view.States, Rows: make([]batchRow, len(vs))}
	for i, v := range vs {
		d.Rows[i] = batchRow{BatchView: v}
		if !operator && (v.LastError != "" || v.ErrorMessage != "") {
			d.Rows[i].LastError, d.Rows[i].ErrorMessage, d.Rows[i].ErrorWithheld = "", "", true
		}
	}
	s.render(w, r, http.StatusOK, "batches.html", page{Title: "Bulk batches", Nav: "batches", Data: d})
}
