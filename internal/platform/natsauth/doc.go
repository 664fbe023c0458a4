// Package natsauth is Sluice's NATS least privilege: one user per role,
// each allowed exactly the subjects its job needs, and the server
// configuration block that declares them.
//
// The role table here is the one source of truth. localenv renders it with
// throwaway passwords for every test server, `sluice-dev demo` does the same
// for its server, and deploy/nats/nats.conf is rendered from it with
// passwords taken from the server's environment (a test keeps the shipped
// file equal to the generator's output).
//
// Only the topology owner may create, update or delete streams and
// consumers; every other role reads stream and durable information, pulls
// from its own durables, acknowledges its own deliveries and publishes to
// its own subjects, and nothing else.
package natsauth
