package classify_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		value    string
		maxDelay time.Duration
		want     time.Duration
		wantOK   bool
	}{
		{"seconds", "120", 0, 2 * time.Minute, true},
		{"zero seconds", "0", 0, 0, true},
		{"padded seconds", " 5 ", 0, 5 * time.Second, true},
		{"http date", "Wed, 04 Mar 2026 12:00:30 GMT", 0, 30 * time.Second, true},
		{"rfc 850 date", "Wednesday, 04-Mar-26 12:01:00 GMT", 0, time.Minute, true},
		{"past date", "Wed, 04 Mar 2026 11:00:00 GMT", 0, 0, true},
		{"cap on seconds", "3600", time.Minute, time.Minute, true},
		{"cap on date", "Thu, 05 Mar 2026 12:00:00 GMT", time.Minute, time.Minute, true},
		{"huge seconds", "99999999999999999999999", 0, 365 * 24 * time.Hour, true},
		{"empty", "", 0, 0, false},
		{"garbage", "soon", 0, 0, false},
		{"fractional", "1.5", 0, 0, false},
		{"negative", "-5", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := classify.ParseRetryAfter(tt.value, now, tt.maxDelay)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
