package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/internal/failure/replay"
)

// correctedData is the correction page's content: the diff, and what was
// done with it.
type correctedData struct {
	Report *replay.CorrectionReport
	// Text and Reason carry a previewed correction to its execute form.
	Text, Reason string
	HasNATS      bool
}

// correct previews or executes a correction of one dead letter's text,
// as `sluice dlq correct` does: a preview is an audited dry run showing
// the diff; execute dispatches the corrected job, which the consumer
// screens again before embedding it.
func (s *Server) correct(w http.ResponseWriter, r *http.Request) {
	// A textarea submits CRLF line ends; the chunk's own are LF.
	text := strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	switch {
	case strings.TrimSpace(text) == "":
		s.fail(w, r, http.StatusBadRequest, "Give the corrected text.")
		return
	case reason == "" || len(reason) > maxReason:
		s.fail(w, r, http.StatusBadRequest, "Say why, in at most 500 characters: the reason goes into the audit trail.")
		return
	}
	c := replay.Correction{DeadLetterID: r.PathValue("id"), Text: &text, By: principalOf(r.Context()).Name, Reason: reason}
	var rep *replay.CorrectionReport
	var err error
	if r.PostFormValue("execute") != "" {
		if s.js == nil {
			s.fail(w, r, http.StatusServiceUnavailable, "This console has no NATS connection, so it cannot dispatch corrections.")
			return
		}
		rep, err = c.Execute(r.Context(), s.pool, s.js)
	} else {
		rep, err = c.DryRun(r.Context(), s.pool)
	}
	switch {
	case errors.Is(err, replay.ErrNoDeadLetter):
		s.fail(w, r, http.StatusNotFound, err.Error())
		return
	case errors.Is(err, replay.ErrCorrection):
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, replay.ErrEscalated), errors.Is(err, replay.ErrResolved), errors.Is(err, replay.ErrNotChunkJob),
		errors.Is(err, replay.ErrInFlight), errors.Is(err, replay.ErrStale):
		s.fail(w, r, http.StatusConflict, err.Error())
		return
	case err != nil && rep == nil:
		s.internal(w, r, err)
		return
	}
	msg := ""
	if err != nil {
		s.cfg.Log.Error().Err(err).Str("replay_id", rep.ReplayID).Msg("console correction dispatch")
		msg = "The corrected job could not be dispatched; the dead letter was unmarked. Try again."
	}
	s.render(w, r, http.StatusOK, "corrected.html", page{Title: "Correction " + rep.ReplayID, Nav: "audit", Flash: msg,
		Data: correctedData{Report: rep, Text: text, Reason: reason, HasNATS: s.js != nil}})
}
