package configtest

import (
	"strings"
	"testing"
)

// Validator is a configuration that can say what is wrong with it.
type Validator interface {
	Validate() error
}

// Case is one configuration and what its Validate must say.
type Case[C Validator] struct {
	// Name names the subtest.
	Name string
	// Config is the configuration under test.
	Config C
	// Want is a substring of the expected error; empty expects none.
	Want string
}

// Run runs each case as a parallel subtest of t.
func Run[C Validator](t *testing.T, cases []Case[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			Check(t, tc.Config.Validate(), tc.Want)
		})
	}
}

// Check fails t unless err contains want, or is nil when want is empty.
func Check(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("Validate() = %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("Validate() = %v, want an error containing %q", err, want)
	}
}
