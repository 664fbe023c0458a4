package console

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// filterParams are the list filters as the URL carries them, so that a
// filtered view survives a reload and can be shared.
var filterParams = []string{"source", "class", "disposition", "stage", "run", "since", "until", "state", "q", "ptext", "sort", includeReplayedParam}

// includeReplayedParam is the replay dialog's checkbox: also take dead
// letters already replayed once.
const includeReplayedParam = "include_replayed"

// listForm is a parsed filter with its raw values, for echoing back.
type listForm struct {
	Values url.Values
	Filter deadletter.Filter
	Sort   string
	// PayloadIgnored is set when a viewer asked for a payload search or
	// an error detail search: both read text that can quote a payload.
	PayloadIgnored bool
	// IncludeReplayed is the replay dialog's checkbox.
	IncludeReplayed bool
}

// Get returns a raw value.
func (f listForm) Get(k string) string { return f.Values.Get(k) }

// parseListForm reads the filter from q. A viewer's payload and error
// detail searches are dropped: payload text, and the provider errors that
// can echo it, are for operators.
func parseListForm(q url.Values, p Principal, now time.Time) (listForm, error) {
	f := listForm{Values: url.Values{}}
	for _, k := range filterParams {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			f.Values.Set(k, v)
		}
	}
	for _, k := range []string{"ptext", "q"} {
		if !p.Operator() && f.Values.Get(k) != "" {
			f.Values.Del(k)
			f.PayloadIgnored = true
		}
	}
	v := f.Values
	f.Filter = deadletter.Filter{Source: v.Get("source"), ErrorClass: v.Get("class"), Disposition: v.Get("disposition"),
		Stage: v.Get("stage"), Run: v.Get("run"), Detail: v.Get("q"), PayloadText: v.Get("ptext")}
	f.IncludeReplayed = v.Get(includeReplayedParam) != ""
	switch st := v.Get("state"); st {
	case "":
		f.Filter.State = deadletter.StateOpen
	case "all":
	default:
		f.Filter.State = deadletter.State(st)
	}
	var err error
	if f.Filter.Since, err = parseWhen(v.Get("since"), now); err != nil {
		return f, fmt.Errorf("since: %w", err)
	}
	if f.Filter.Until, err = parseWhen(v.Get("until"), now); err != nil {
		return f, fmt.Errorf("until: %w", err)
	}
	switch f.Sort = v.Get("sort"); f.Sort {
	case "", sortNewest:
		f.Sort = sortNewest
	case sortOldest, sortAttempts:
	default:
		return f, fmt.Errorf("sort %q: use newest, oldest or attempts", f.Sort)
	}
	return f, f.Filter.Validate()
}

// parseWhen reads an RFC 3339 time, a datetime-local value (UTC), or a
// duration meaning "that long ago".
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2026-01-02T15:04) nor a duration ago (24h)", s)
}

// absolute returns the form's values with relative times resolved, so a
// dry run and the replay it leads to select the same window.
func (f listForm) absolute() url.Values {
	out := url.Values{}
	for k, v := range f.Values {
		out[k] = v
	}
	if !f.Filter.Since.IsZero() {
		out.Set("since", f.Filter.Since.Format(time.RFC3339Nano))
	}
	if !f.Filter.Until.IsZero() {
		out.Set("until", f.Filter.Until.Format(time.RFC3339Nano))
	}
	out.Del("sort")
	return out
}
