// Package archtest holds the tests of the module's layout: how deep its
// import graph is, which packages the console may link, that pkg/ never
// imports internal/, that the layers import downward, that each table is
// written, and read, only by the package that owns it (reads outside it
// are listed, one by one, until they move), and that the product commands
// link no internal/dev package and are what the image builds. It has no
// code of its own.
package archtest
