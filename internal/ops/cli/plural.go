package cli

import "fmt"

// plural is n and its noun, one or many as n asks: "1 document",
// "2 documents".
func plural(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, noun(n, one, many))
}

// noun is one when n is 1, many otherwise.
func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
