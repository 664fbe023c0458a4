// Package bench is the module of the benchmark's River peer. It is a module
// of its own so that River is a dependency of the benchmark only, never of
// the services: the main module's go.mod does not name it.
package bench
