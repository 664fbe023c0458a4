// Package fleetbudget shares one provider budget among every process
// that calls the provider with the same key (invariant 12: one quota,
// one budget). The consumers, the dlq-replayer and any later backfill
// each run a Member beside their embedder.Budget; the Member sets the
// fraction of the whole allowance that process may spend.
//
// # Design
//
// Membership lives in a JetStream key-value bucket (broker.BudgetBucket)
// that every service can already reach, so the fleet needs no new
// server and no leader. Each member puts one entry under
// "<budget key>.<member id>" every Heartbeat, saying what it spent
// lately and whether it waited for its share; the bucket's TTL
// (broker.BudgetMemberTTL) drops the entry of a member that stopped
// heartbeating. Expiry runs on the server's clock, so members' clocks
// never have to agree. At each heartbeat a member reads every entry of
// its key, computes the whole fleet's allocation with Allocate — a pure
// function every member evaluates on the same entries, so they agree
// without talking to each other — and paces itself to its own part.
//
// Shares follow demand: a member that waited for budget (hungry) claims
// an equal share; one that did not claims what it spent with headroom,
// never less than a floor (IdleFloor of an equal share). Water-filling
// gives every claim up to an equal level, and what idle members leave
// is spread evenly. An idle dlq-replayer thus holds a sliver, not a
// fifth, of the budget, while four busy consumers split the rest; the
// moment it has work it waits, turns hungry, and within one heartbeat
// every member makes room. The sum of the allocations is exactly one.
//
// A member paces to less than its allocation while allocations move
// (Pace): a decrease applies at once, an increase only at the next
// heartbeat, by which time every other member has seen the claim behind
// it and made room; a new member starts at the idle floor. So members
// never overdraw the budget between their heartbeats, whatever their
// phases: without this, four consumers starting together spent 1.9
// times the quota in their first seconds.
//
// Timing: a new member is seen by the others within one Heartbeat (2 s
// by default), so it never bursts past the budget while the others have
// not yet made room. A dead member's entry
// expires BudgetMemberTTL (8 s) after its last heartbeat; the others
// take up its share at their next heartbeats, within 13 s. A graceful
// stop keeps heartbeating while the process finishes its in-flight
// work at its share, then deletes the entry (Leave), so the others take
// up the share only once it is no longer spent.
//
// When the bucket cannot be read or written (NATS down, a partition), a
// member falls back to the budget divided by the number of members it
// last saw, itself included, or its current share if lower: it never
// raises its share without the others' agreement (as in Pace), so
// whether every member is cut off or only one, the fleet stays within
// the budget — never unlimited. The first successful heartbeat
// after the outage restores the demand-driven shares.
//
// # The budget key
//
// Members share a budget when they share a key. By default the key is a
// fingerprint of the provider's URL and API key (Fingerprint): a
// truncated SHA-256, so neither the key nor anything that helps guess it
// is written to NATS, and two processes with the same credentials share
// a budget without any configuration. BUDGET_KEY overrides it where the
// fingerprint would split one quota (the same organisation reached
// through two URLs or two keys) or join two.
//
// # What members may do
//
// A member reads the bucket's stream information (the subjects of its
// key's entries), gets entries directly ($JS.API.DIRECT.GET) and puts
// and deletes its own entry: no consumer, no stream administration (see
// natsauth). Only the topology owner declares the bucket (`sluice nats
// setup`).
package fleetbudget
