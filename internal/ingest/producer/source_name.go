package producer

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/pkg/messages"
)

// validateSourceName checks --source against the rule of source ids
// (messages.ValidateSourceID), saying in the flag's words what is wrong
// and which name would do.
func validateSourceName(name string) error {
	if name == "" {
		return errors.New("--source is required: name the corpus, e.g. --source docs")
	}
	err := messages.ValidateSourceID(name)
	if err == nil {
		return nil
	}
	reason := err.Error()
	if de := (*messages.DecodeError)(nil); errors.As(err, &de) {
		reason = de.Reason
	}
	fix := "e.g. --source docs"
	if s := messages.SuggestSourceID(name); s != "" {
		fix = "e.g. --source " + s
	}
	return fmt.Errorf("--source %q: %s: rename it, %s", name, reason, fix)
}
