// Package startuptest holds tests of how every Sluice binary starts: a
// setting that names the wrong server, or credentials the server will
// not take, stops the binary at once with a non-zero exit status and a
// message that names the setting to fix, while real PostgreSQL and NATS
// servers run beside it.
package startuptest
