package console

import (
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// overviewData is the overview page's content.
type overviewData struct {
	*overview
	Durable    replay.DurableState
	DurableErr string
	HasNATS    bool
	RefreshMS  int64
}

// overviewCache shares one reading of the overview among every open page:
// at a million dead letters the depth takes a full scan, so it is read at
// most once per Refresh, or per four times as long as the last reading
// took, whichever is longer. The lock also makes concurrent readers wait
// for one reading instead of starting their own.
type overviewCache struct {
	mu  sync.Mutex
	v   *overview
	at  time.Time
	ttl time.Duration
}

func (s *Server) cachedOverview(r *http.Request) (*overview, error) {
	c := &s.overview
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v != nil && time.Since(c.at) < c.ttl {
		return c.v, nil
	}
	start := time.Now()
	o, err := readOverview(r.Context(), s.pool)
	if err != nil {
		return nil, err
	}
	c.v, c.at, c.ttl = o, time.Now(), max(s.cfg.Refresh, 4*time.Since(start))
	return o, nil
}

func (s *Server) readOverviewData(r *http.Request) (*overviewData, error) {
	o, err := s.cachedOverview(r)
	if err != nil {
		return nil, err
	}
	d := &overviewData{overview: o, HasNATS: s.js != nil, RefreshMS: s.cfg.Refresh.Milliseconds()}
	if s.js != nil {
		if d.Durable, err = replay.State(r.Context(), s.js); err != nil {
			d.DurableErr = err.Error()
		}
	}
	return d, nil
}

func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.readOverviewData(r)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "overview.html", page{Title: "Overview", Nav: "overview", Flash: flashes[r.URL.Query().Get("flash")], Data: d})
}

// The overview's flash messages, by the key a redirect puts in ?flash=:
// only these texts are ever shown, so a link cannot put words of its own
// on the console's page.
const (
	flashPaused       = "paused"
	flashResumed      = "resumed"
	flashReasonNeeded = "reason-needed"
)

var flashes = map[string]string{
	flashPaused:       "Replays paused; live ingestion continues.",
	flashResumed:      "Replays resumed.",
	flashReasonNeeded: "Pausing or resuming replays needs a reason (at most 500 characters).",
}

// overviewFragment is the live part of the overview, fetched by
// console.js every Refresh without reloading the page.
func (s *Server) overviewFragment(w http.ResponseWriter, r *http.Request) {
	d, err := s.readOverviewData(r)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.renderTemplate(w, r, http.StatusOK, "overview.html", "live", page{Data: d})
}

// listCountCap is where the list stops counting matches.
const listCountCap = 100000

// listData is the dead-letter list's content.
type listData struct {
	Form    listForm
	Choices deadletter.Choices
	States  []deadletter.State
	Matched int64
	// Capped is set when more than Matched match.
	Capped bool
	Items  []listItem
	Next   url.Values
	First  bool
}

func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	q := r.URL.Query()
	form, err := parseListForm(q, p, time.Now())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Filter: "+err.Error())
		return
	}
	after, err := parseCursor(q.Get("after"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	d := listData{Form: form, States: deadletter.FilterStates, First: after == nil}
	ctx := r.Context()
	items, next, err := listPage(ctx, s.pool, listQuery{Filter: form.Filter, Sort: form.Sort, After: after, Limit: s.cfg.PageSize})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !p.Operator() {
		for i := range items {
			items[i].ErrorDetail = nil
		}
	}
	d.Items = items
	if next != nil {
		d.Next = url.Values{}
		for k, v := range form.Values {
			d.Next[k] = v
		}
		d.Next.Set("after", next.String())
	}
	if d.Matched, d.Capped, err = deadletter.Count(ctx, s.pool, form.Filter, listCountCap); err != nil {
		s.internal(w, r, err)
		return
	}
	if d.Choices, err = deadletter.ReadChoices(ctx, s.pool); err != nil {
		s.internal(w, r, err)
		return
	}
	flash := ""
	if form.PayloadIgnored {
		flash = "Payload and error detail searches are for operators; they were ignored."
	}
	s.render(w, r, http.StatusOK, "list.html", page{Title: "Dead letters", Nav: "list", Flash: flash, Data: d})
}

// letterData is one dead letter's page content.
type letterData struct {
	*letter
	// TextAsked is set when the page shows the text on request.
	TextAsked bool
	// Document is the dead letter's document, nil if it has none.
	Document *document
	// Kept is the file the dead letter keeps, nil if none.
	Kept *keptFile
}

func (s *Server) letterPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	l, err := readLetter(r.Context(), s.pool, r.PathValue("id"))
	if errors.Is(err, errNotFound) {
		s.fail(w, r, http.StatusNotFound, "No dead letter with that id.")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	asked := r.URL.Query().Get("text") == "1"
	if asked && !p.Operator() {
		s.fail(w, r, http.StatusForbidden, "Chunk text is for operators.")
		return
	}
	doc, err := readDocument(r.Context(), s.pool, l.DocID)
	if err != nil && !errors.Is(err, errNotFound) {
		s.internal(w, r, err)
		return
	}
	kept, err := readKeptFile(r.Context(), s.pool, l, p.Operator())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	l.view(asked && p.Operator(), p.Operator())
	s.render(w, r, http.StatusOK, "letter.html", page{Title: "Dead letter " + l.ID, Nav: "list", Data: letterData{letter: l, TextAsked: asked, Document: doc, Kept: kept}})
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	runs, err := listRuns(r.Context(), s.pool, r.URL.Query().Get("source"), false, 200)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "runs.html", page{Title: "Ingest runs", Nav: "runs", Data: runs})
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	run, err := readRun(r.Context(), s.pool, r.PathValue("id"))
	if errors.Is(err, errNotFound) {
		s.fail(w, r, http.StatusNotFound, "No run with that id.")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "run.html", page{Title: "Run " + run.RunID, Nav: "runs", Data: run})
}

// auditPageSize is how many audit entries the audit page shows.
const auditPageSize = 200

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	rows, err := replay.ListAudit(r.Context(), s.pool, replay.AuditFilter{Limit: auditPageSize})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "audit.html", page{Title: "Audit", Nav: "audit", Data: rows})
}
