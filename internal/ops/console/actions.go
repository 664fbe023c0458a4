package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// maxReason bounds a reason: a sentence, not a document.
const maxReason = 500

// loginData is the login page's content.
type loginData struct {
	Next  string
	Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// A one-time code (sluice demo prints a link with one) signs in once;
	// the long-lived token is never taken from a URL, where proxies and
	// history keep it, nor on a GET another site can make a browser send.
	if c := q.Get("code"); c != "" {
		client := s.clientOf(r)
		if !s.throttle.allowed(client) {
			s.throttled(w, r)
			return
		}
		t, ok := s.codes.redeem(c)
		if !ok {
			s.throttle.failed(client)
			s.render(w, r, http.StatusUnauthorized, "login.html", page{Title: "Sign in", Data: loginData{Error: "That sign-in link is used up or expired: sign in with your token."}})
			return
		}
		s.throttle.succeeded(client)
		s.setSession(w, r, t)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d := loginData{Next: safeNext(q.Get("next"))}
	if q.Has("token") {
		d.Error = "A token is never taken from a link: paste it here."
	}
	s.render(w, r, http.StatusOK, "login.html", page{Title: "Sign in", Data: d})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		s.fail(w, r, http.StatusForbidden, "Refused: the sign-in form must come from the console's own page.")
		return
	}
	t, err := s.tryToken(r, r.PostFormValue("token"))
	if errors.Is(err, errThrottled) {
		s.throttled(w, r)
		return
	}
	if err != nil {
		s.render(w, r, http.StatusUnauthorized, "login.html", page{Title: "Sign in", Data: loginData{Error: "That token is not valid."}})
		return
	}
	s.setSession(w, r, t)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// safeNext returns next if it is a path on this console, else "/". A
// browser strips tabs and newlines from a Location and reads "/\" as
// "//", so "/<TAB>/evil.example" would leave the site: next must start
// with one "/" followed by neither "/" nor "\", hold no control
// character nor backslash, and parse to a path without scheme or host.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') {
		return "/"
	}
	for _, c := range next {
		if unicode.IsControl(c) || unicode.IsSpace(c) {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.clearSession(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// replayData is the replay dialog's content: the dry run of the whole
// filter.
type replayData struct {
	Form     listForm
	Hidden   url.Values
	Matched  int64
	Preview  *replay.Preview
	MaxLimit int
	Narrow   bool
	HasNATS  bool
	Error    string
}

// scope is the replay the form asks for: everything it matches, up to the
// cap.
func (f listForm) scope() replay.Scope {
	return replay.Scope{Filter: f.Filter, Limit: replay.MaxLimit, IncludeReplayed: f.IncludeReplayed}
}

// dryRun previews the replay values ask for. With audit, the preview is a
// dry run on the audit trail under the signed-in principal; without, it
// only counts (a form re-shown after a mistake).
func (s *Server) dryRun(r *http.Request, values url.Values, audit bool) (*replayData, int, error) {
	p := principalOf(r.Context())
	form, err := parseListForm(values, p, time.Now())
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	d := &replayData{Form: form, Hidden: form.absolute(), MaxLimit: replay.MaxLimit, Narrow: form.Filter.Narrow(), HasNATS: s.js != nil}
	if d.Matched, _, err = deadletter.Count(r.Context(), s.pool, form.Filter, 0); err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if !d.Narrow {
		return d, http.StatusOK, nil
	}
	if audit {
		d.Preview, err = replay.DryRun(r.Context(), s.pool, form.scope(), p.Name)
	} else {
		d.Preview, err = replay.Count(r.Context(), s.pool, form.scope())
	}
	if errors.Is(err, replay.ErrScope) {
		return nil, http.StatusBadRequest, err
	}
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return d, http.StatusOK, nil
}

// replayDialog runs the dry run of replaying everything the posted filter
// matches, on the audit trail, and asks for a reason. It is a POST: the
// audit row is a change no other site may cause.
func (s *Server) replayDialog(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
		return
	}
	d, status, err := s.dryRun(r, r.PostForm, true)
	if err != nil {
		s.answer(w, r, status, err)
		return
	}
	s.render(w, r, http.StatusOK, "replay.html", page{Title: "Replay: dry run", Nav: "list", Data: d})
}

// replayExecute replays the filter posted from the dialog, through the
// same code as `sluice dlq replay --execute`.
func (s *Server) replayExecute(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	d, status, err := s.dryRun(r, r.PostForm, false)
	switch {
	case err != nil:
		s.answer(w, r, status, err)
		return
	case s.js == nil:
		s.fail(w, r, http.StatusServiceUnavailable, "This console has no NATS connection, so it cannot dispatch replays.")
		return
	case !d.Narrow:
		s.fail(w, r, http.StatusBadRequest, "Narrow the filter first: a replay needs a source, an error class, a run or a start time.")
		return
	case reason == "" || len(reason) > maxReason:
		d.Error = "Say why, in at most 500 characters: the reason goes into the audit trail."
		s.render(w, r, http.StatusBadRequest, "replay.html", page{Title: "Replay: dry run", Nav: "list", Data: d})
		return
	}
	p := principalOf(r.Context())
	preview, err := replay.Execute(r.Context(), s.pool, s.js, d.Form.scope(), reason, p.Name)
	if preview == nil && err != nil {
		s.internal(w, r, err)
		return
	}
	msg := ""
	if err != nil {
		s.cfg.Log.Error().Err(err).Str("replay_id", preview.ReplayID).Msg("console replay dispatch")
		msg = "Some jobs could not be dispatched and were unmarked; replay the same filter again."
	}
	s.render(w, r, http.StatusOK, "replayed.html", page{Title: "Replay " + preview.ReplayID, Nav: "audit", Flash: msg, Data: preview})
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status >= 500 {
		s.internal(w, r, err)
		return
	}
	s.fail(w, r, status, err.Error())
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request)  { s.pauseOrResume(w, r, true) }
func (s *Server) resume(w http.ResponseWriter, r *http.Request) { s.pauseOrResume(w, r, false) }

// pauseOrResume acts on the replay durable exactly as `sluice dlq
// pause|resume` does, and records who did it and why.
func (s *Server) pauseOrResume(w http.ResponseWriter, r *http.Request, pause bool) {
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" || len(reason) > maxReason {
		http.Redirect(w, r, "/?flash="+flashReasonNeeded, http.StatusSeeOther)
		return
	}
	if s.js == nil {
		s.fail(w, r, http.StatusServiceUnavailable, "This console has no NATS connection.")
		return
	}
	t := replay.Toggle{Pause: pause, By: principalOf(r.Context()).Name, Reason: reason}
	if d, err := time.ParseDuration(r.PostFormValue("for")); pause && err == nil && d > 0 {
		t.Until = time.Now().Add(d)
	}
	if _, err := t.Apply(r.Context(), s.pool, s.js); err != nil {
		s.internal(w, r, err)
		return
	}
	flash := flashResumed
	if pause {
		flash = flashPaused
	}
	http.Redirect(w, r, "/?flash="+flash, http.StatusSeeOther)
}
