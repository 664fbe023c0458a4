// Package demo runs the whole system on one machine, failures included:
// it brings up PostgreSQL and NATS through internal/dev/localenv, starts the
// embedding simulator with a realistic fault profile and every service as
// its own OS process, ingests a generated sample corpus with poison
// documents, waits until the system converges, changes the embedding
// model through the sluice CLI while the running consumers backfill the
// new index generation, and reports what happened.
package demo
