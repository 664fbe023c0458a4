// Command gendoc writes the configuration page, docs/configuration.md,
// from the settings the binaries register (see package catalog). Run it
// with go generate ./internal/dev/catalog/ from the repository root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/internal/dev/catalog"
)

func main() {
	out := flag.String("out", catalog.PagePath, "file to write")
	flag.Parse()
	page, err := catalog.Page()
	if err == nil {
		err = os.WriteFile(*out, page, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
