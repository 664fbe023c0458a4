// Package extract tells what a file is and pulls the text out of the
// document formats the corpus reader cannot read as text.
//
// Detect decides a file's Format from its first HeadSize (4096) bytes,
// content first and name second, and says whether the file is readable as
// text, extractable by this package, or unsupported binary. Every file gets
// a Detection: nothing is left unaccounted for.
//
// The package touches no infrastructure.
package extract
