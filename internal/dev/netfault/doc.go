// Package netfault puts Toxiproxy, the standard network-fault proxy, between
// clients and a server, so tests can make a real TCP path slow, reset,
// silent or narrow while real processes use it.
//
// A Server runs Toxiproxy in-process with its HTTP API on a loopback port;
// each Proxy listens on its own free loopback port and forwards to one
// upstream address. Faults are Toxiproxy toxics: Inject adds one, Heal
// removes them all. Nothing here is linked into a production binary.
package netfault
