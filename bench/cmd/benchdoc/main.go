// Command benchdoc writes docs/benchmarks.md from a make bench report;
// make bench runs it after the bench.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/bench/benchdoc"
)

func main() {
	in := flag.String("in", "results/latest.json", "the report make bench wrote")
	out := flag.String("out", "../docs/benchmarks.md", "the page to write")
	flag.Parse()
	r, err := benchdoc.Load(*in)
	if err == nil {
		var page []byte
		if page, err = benchdoc.Render(r); err == nil {
			err = os.WriteFile(*out, page, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}
