package service_test

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/service"
)

type workers struct{ n int }

func (w *workers) Register(l *config.Loader) {
	l.Int(&w.n, "workers", "WORKERS", 2, "workers")
}

func (w *workers) Validate() error {
	if w.n < 1 {
		return errors.New("--workers must be at least 1")
	}
	return nil
}

func TestLoad(t *testing.T) {
	env := map[string]string{"WORKERS": "5"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name string
		args []string
		want int // workers, or -1 for an error
		code int // ExitCode of the error
		rest int
	}{
		{"environment over default", []string{"in.txt"}, 5, 0, 1},
		{"flag over environment", []string{"--workers", "3"}, 3, 0, 0},
		{"unknown flag", []string{"--wrokers", "3"}, -1, 2, 0},
		{"invalid value", []string{"--workers", "0"}, -1, 2, 0},
		{"help", []string{"--help"}, -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w workers
			var stderr bytes.Buffer
			rest, err := service.Load("svc", tc.args, lookup, &stderr, &w)
			if tc.want < 0 {
				if err == nil {
					t.Fatalf("no error; workers %d", w.n)
				}
				if got := service.ExitCode(err); got != tc.code {
					t.Fatalf("exit code %d, want %d (%v)", got, tc.code, err)
				}
				if tc.code == 0 && !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("err %v, want flag.ErrHelp", err)
				}
				return
			}
			if err != nil || w.n != tc.want || len(rest) != tc.rest {
				t.Fatalf("workers %d, rest %q, err %v; want %d, %d left", w.n, rest, err, tc.want, tc.rest)
			}
		})
	}
}
