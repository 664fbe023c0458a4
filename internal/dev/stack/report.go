package stack

import (
	"fmt"
	"strings"
)

// report prints, on Stdout, the operator's environment to export and
// where every other binary's is.
func (st *state) report(c Config) error {
	w := c.Stdout
	sluice := clientNamed("sluice")
	embedder := "embed-sim (simulated vectors; pass --embedder-url, --model and --dims for a real provider)"
	if !st.Embedder.simulated() {
		embedder = st.Embedder.URL
	}
	fmt.Fprintf(w, "# Sluice is running in %s; stop it with: sluice-dev down --dir %s\n", c.Dir, c.Dir)
	fmt.Fprintf(w, "# embedder: %s, model %s, %d dims\n", embedder, st.Embedder.Model, st.Embedder.Dims)
	fmt.Fprintf(w, "# The operator's environment (the sluice CLI); also in %s:\n", envFile(c.Dir, sluice))
	for _, kv := range st.env(sluice, "") {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(w, "export %s='%s'\n", k, v)
	}
	fmt.Fprintln(w, "# Each binary connects as its own PostgreSQL role and NATS user; source its file before running it:")
	for _, cl := range clients {
		fmt.Fprintf(w, "#   %-13s %s\n", cl.name, envFile(c.Dir, cl))
	}
	fmt.Fprintf(w, "# Logs: %s\n", c.Dir+"/logs")
	return nil
}
