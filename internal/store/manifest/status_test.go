package manifest_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

func TestCanMove(t *testing.T) {
	t.Parallel()
	legal := map[[2]manifest.Status]bool{
		{manifest.Pending, manifest.Stored}:     true,
		{manifest.Pending, manifest.Parked}:     true,
		{manifest.Pending, manifest.Superseded}: true,
		{manifest.Parked, manifest.Stored}:      true,
		{manifest.Parked, manifest.Parked}:      true,
		{manifest.Parked, manifest.Pending}:     true,
		{manifest.Parked, manifest.Superseded}:  true,
		{manifest.Stored, manifest.Pending}:     true,
		{manifest.Stored, manifest.Superseded}:  true,
	}
	for _, tc := range []struct {
		from, to manifest.Status
		want     bool
	}{
		{manifest.Pending, manifest.Pending, false},
		{manifest.Pending, manifest.Stored, true},
		{manifest.Pending, manifest.Parked, true},
		{manifest.Pending, manifest.Superseded, true},
		{manifest.Stored, manifest.Stored, false},
		{manifest.Stored, manifest.Parked, false},
		{manifest.Stored, manifest.Pending, true},
		{manifest.Stored, manifest.Superseded, true},
		{manifest.Parked, manifest.Parked, true},
		{manifest.Parked, manifest.Stored, true},
		{manifest.Parked, manifest.Pending, true},
		{manifest.Parked, manifest.Superseded, true},
		{manifest.Superseded, manifest.Pending, false},
		{manifest.Superseded, manifest.Stored, false},
		{manifest.Superseded, manifest.Parked, false},
		{manifest.Superseded, manifest.Superseded, false},
		{"", manifest.Pending, false},
		{manifest.Pending, "done", false},
	} {
		if got := manifest.CanMove(tc.from, tc.to); got != tc.want {
			t.Errorf("CanMove(%q, %q) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	// Every pair is covered by the list above or illegal.
	for _, from := range manifest.Statuses {
		for _, to := range manifest.Statuses {
			if got := manifest.CanMove(from, to); got != legal[[2]manifest.Status{from, to}] {
				t.Errorf("CanMove(%q, %q) = %v, want %v", from, to, got, !got)
			}
		}
	}
}

func TestSQLLiteralsQuoteTheirStatus(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]string{
		manifest.SQLPending: "'pending'", manifest.SQLStored: "'stored'", manifest.SQLParked: "'parked'",
		manifest.SQLSuperseded: "'superseded'", manifest.SQLDocReady: "'ready'", manifest.SQLDocFailed: "'failed'",
		manifest.SQLDocEmpty: "'empty'",
	} {
		if lit != want {
			t.Errorf("literal %s, want %s", lit, want)
		}
	}
}
